import type { StreamEvent } from '#libs/contracts';
import { StreamPublisher } from './stream-publisher.js';
import type { StreamStore } from './stream-store.js';

/** A publisher whose store and producer record in memory: the batching logic alone. */
function recordingPublisher(): { publisher: StreamPublisher; batches: StreamEvent[][] } {
  const batches: StreamEvent[][] = [];
  const store = {
    save: async (_r: string, _p: string, events: readonly StreamEvent[]) => void batches.push([...events]),
  } as unknown as StreamStore;
  const publisher = new StreamPublisher(store, { send: async () => [] });
  return { publisher, batches };
}

describe('TokenWriter', () => {
  it('sends the first token at once and batches the rest, numbering from the given seq', async () => {
    const { publisher, batches } = recordingPublisher();
    const writer = publisher.tokenWriter('r', 'p', 5, 10);
    writer.push('Hello');
    writer.push(' wide');
    writer.push(' world');
    expect(writer.seq).toBe(8);
    await writer.close();
    expect(batches).toEqual([
      [{ seq: 5, type: 'token', data: { content: 'Hello' } }],
      [
        { seq: 6, type: 'token', data: { content: ' wide' } },
        { seq: 7, type: 'token', data: { content: ' world' } },
      ],
    ]);
  });

  it('sends nothing more while a batch is out: what came meanwhile leaves as one batch after it', async () => {
    const batches: StreamEvent[][] = [];
    let release!: () => void;
    const store = {
      save: async (_r: string, _p: string, events: readonly StreamEvent[]) => {
        batches.push([...events]);
        if (batches.length === 1) await new Promise<void>((resolve) => (release = resolve));
      },
    } as unknown as StreamStore;
    const writer = new StreamPublisher(store, { send: async () => [] }).tokenWriter('r', 'p', 1, 1);
    writer.push('a');
    for (const piece of ['b', 'c', 'd']) {
      await new Promise((resolve) => setTimeout(resolve, 5)); // past the interval, the first still out
      writer.push(piece);
    }
    expect(batches).toHaveLength(1);
    release();
    await writer.close();
    expect(batches.map((b) => b.map((e) => e.data.content).join(''))).toEqual(['a', 'bcd']);
    expect(batches.flat().map((e) => e.seq)).toEqual([1, 2, 3, 4]);
  });

  it('sends the next batch no sooner than the interval after the one before began', async () => {
    const { publisher, batches } = recordingPublisher();
    const writer = publisher.tokenWriter('r', 'p', 1, 60_000);
    writer.push('a');
    for (const piece of ['b', 'c']) {
      await new Promise((resolve) => setTimeout(resolve, 5)); // the first batch is back; the minute is not over
      writer.push(piece);
    }
    expect(batches).toHaveLength(1);
    await writer.close(); // close sends what is pending at once
    expect(batches.map((b) => b.map((e) => e.data.content).join(''))).toEqual(['a', 'bc']);
  });

  it('skips empty pieces and reports a failed send on close', async () => {
    const store = { save: async () => Promise.reject(new Error('db down')) } as unknown as StreamStore;
    const writer = new StreamPublisher(store, { send: async () => [] }).tokenWriter('r', 'p', 1);
    writer.push('');
    expect(writer.seq).toBe(1);
    writer.push('x');
    await expect(writer.close()).rejects.toThrow('db down');
  });
});
