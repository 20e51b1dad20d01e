import type { ProducerRecord } from 'kafkajs';
import type { StreamEvent } from '#libs/contracts';
import { StreamPublisher } from './stream-publisher.js';
import type { RequestEvents, StreamStore } from './stream-store.js';

/** A publisher whose store and producer record in memory: the batching logic alone. `batches`
 * has one request's events a send; `sends` the requests of each send. A store insert takes
 * `saveMs` (as PostgreSQL's does), or no time. */
function recordingPublisher(
  intervalMs: number,
  saveMs = 0,
): {
  publisher: StreamPublisher;
  batches: StreamEvent[][];
  sends: string[][];
  kafka: ProducerRecord[];
} {
  const batches: StreamEvent[][] = [];
  const sends: string[][] = [];
  const kafka: ProducerRecord[] = [];
  const store = {
    save: async (rows: readonly RequestEvents[]) => {
      if (saveMs > 0) await new Promise((resolve) => setTimeout(resolve, saveMs));
      sends.push(rows.map((r) => r.requestId));
      for (const r of rows) batches.push([...r.events]);
    },
  } as unknown as StreamStore;
  const publisher = new StreamPublisher(store, { send: async (record) => kafka.push(record) }, intervalMs);
  return { publisher, batches, sends, kafka };
}

describe('TokenWriter', () => {
  it('sends the first token at once and batches the rest, numbering from the given seq', async () => {
    const { publisher, batches } = recordingPublisher(10);
    const writer = publisher.tokenWriter('r', 'p', 5);
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
      save: async ([{ events }]: readonly RequestEvents[]) => {
        batches.push([...events!]);
        if (batches.length === 1) await new Promise<void>((resolve) => (release = resolve));
      },
    } as unknown as StreamStore;
    const writer = new StreamPublisher(store, { send: async () => [] }, 1).tokenWriter('r', 'p', 1);
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
    const { publisher, batches } = recordingPublisher(60_000);
    const writer = publisher.tokenWriter('r', 'p', 1);
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

  // Issue 28: each stream's batches were an insert, a NOTIFY and a Kafka request of their own, so
  // ten streams held open cost the shared engines ten times one.
  it("sends every stream's pending tokens together: one insert and one Kafka request, a message per request", async () => {
    const { publisher, batches, sends, kafka } = recordingPublisher(60_000);
    const writers = ['r1', 'r2', 'r3'].map((r) => publisher.tokenWriter(r, 'p', 1));
    for (const w of writers) w.push(`${w.requestId} first`); // each stream's first token: at once
    for (const w of writers) w.push(`${w.requestId} second`);
    await writers[0]!.close();
    await Promise.all(writers.map((w) => w.close()));
    expect(sends.length).toBeLessThan(writers.length * 2);
    expect(sends.at(-1)?.sort()).toEqual(['r1', 'r2', 'r3']);
    expect(
      kafka
        .at(-1)
        ?.messages.map((m) => m.key)
        .sort(),
    ).toEqual(['r1', 'r2', 'r3']);
    for (const w of writers)
      expect(
        batches
          .flat()
          .filter((e) => String(e.data.content).startsWith(w.requestId))
          .map((e) => [e.seq, e.data.content]),
      ).toEqual([
        [1, `${w.requestId} first`],
        [2, `${w.requestId} second`],
      ]);
  });

  it('fails only the stream whose events cannot be stored, not the others sent with it', async () => {
    const stored: string[] = [];
    const store = {
      save: async (rows: readonly RequestEvents[]) => {
        if (rows.some((r) => r.requestId === 'bad')) throw new Error('unsupported Unicode escape sequence');
        stored.push(...rows.map((r) => r.requestId));
      },
    } as unknown as StreamStore;
    const publisher = new StreamPublisher(store, { send: async () => [] }, 60_000);
    const good = publisher.tokenWriter('good', 'p', 1);
    const bad = publisher.tokenWriter('bad', 'p', 1);
    good.push('a');
    bad.push('b');
    good.push('c');
    bad.push('d');
    await expect(bad.close()).rejects.toThrow('unsupported Unicode');
    await expect(good.close()).resolves.toBeUndefined();
    expect(stored.filter((r) => r === 'good').length).toBeGreaterThan(0);
  });

  it('closes a writer without waiting for the other streams that go on', async () => {
    // Each insert takes 3 ms and the other stream pushes a token every millisecond, so there is
    // always something of it pending or out: the flusher never goes quiet while it goes on.
    const { publisher, batches } = recordingPublisher(5, 3);
    const going = publisher.tokenWriter('going', 'p', 1);
    const ending = publisher.tokenWriter('ending', 'p', 1);
    going.push('x0');
    ending.push('last words');
    let pushed = 0;
    let closedAt: number | undefined; // how many tokens the other stream had pushed when the close returned
    const closing = ending.close().then(() => (closedAt = pushed));
    // The other stream goes on for 500 tokens (a hundred sends at least): a close that waited for
    // every stream to go quiet would still be out when they are all pushed.
    while (closedAt === undefined && pushed < 500) {
      going.push(`x${++pushed}`);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(closedAt).toBeDefined();
    await closing;
    expect(batches).toContainEqual([{ seq: 1, type: 'token', data: { content: 'last words' } }]);
    // The other stream is still open and loses nothing: every token it pushed, in order.
    going.push(`x${++pushed}`);
    await going.close();
    const goingEvents = batches.flat().filter((e) => String(e.data.content).startsWith('x'));
    expect(goingEvents.map((e) => [e.seq, e.data.content])).toEqual(
      Array.from({ length: pushed + 1 }, (_, i) => [i + 1, `x${i}`]),
    );
  });
});
