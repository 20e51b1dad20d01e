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

  it('skips empty pieces and reports a failed send on close', async () => {
    const store = { save: async () => Promise.reject(new Error('db down')) } as unknown as StreamStore;
    const writer = new StreamPublisher(store, { send: async () => [] }).tokenWriter('r', 'p', 1);
    writer.push('');
    expect(writer.seq).toBe(1);
    writer.push('x');
    await expect(writer.close()).rejects.toThrow('db down');
  });
});
