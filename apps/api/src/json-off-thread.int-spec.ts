import { EventEmitter } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import type { Request, Response } from 'express';
import { BlobStore } from '#libs/persistence';
import { Fixtures } from '../../../test/support/fixtures.js';
import { testConfig } from '../../../test/support/config.js';
import { bodyParser } from './body-limits.js';
import { isDatabaseUnavailable } from './errors/dependency-unavailable.js';
import { BULK_THREAD_NICE, bodyHash, HeldText, HOLD_CHARS, JsonThread, JsonThreadLost } from './json-off-thread.js';
import { parseAgentRequest } from './runs/agent-request.validation.js';

// A real worker thread, no I/O.
describe('JsonThread', () => {
  const thread = new JsonThread();
  afterAll(() => thread.close());

  const utf8 = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'));

  it('parses UTF-8 JSON, any value, a byte-order mark dropped', async () => {
    await expect(thread.parse(utf8('{"message":"héllo ✓","n":[1,2]}'))).resolves.toEqual({
      message: 'héllo ✓',
      n: [1, 2],
    });
    await expect(thread.parse(utf8('"text"'))).resolves.toBe('text');
    await expect(thread.parse(utf8('\ufeff{"a":1}'))).resolves.toEqual({ a: 1 });
  });

  it("rejects invalid JSON with the parser's SyntaxError", async () => {
    await expect(thread.parse(utf8('{"message": '))).rejects.toThrow(SyntaxError);
    await expect(thread.parse(utf8('{"a":1}'))).resolves.toEqual({ a: 1 });
  });

  it('answers each body, in order, when several are sent at once', async () => {
    const values = await Promise.all(Array.from({ length: 20 }, (_, i) => thread.parse(utf8(JSON.stringify({ i })))));
    expect(values).toEqual(Array.from({ length: 20 }, (_, i) => ({ i })));
  });

  // Issue 28: an 8 MB body parsed on the api's event loop held every other request behind it.
  it('leaves the calling thread free while it parses a large body', async () => {
    const large = utf8(JSON.stringify({ rows: Array.from({ length: 400_000 }, (_, i) => ({ i, name: `row ${i}` })) }));
    const order: string[] = [];
    const parsing = thread.parse(large).then((value) => {
      order.push('parsed');
      return value as { rows: unknown[] };
    });
    await new Promise((resolve) => setTimeout(resolve, 0));
    order.push('timer on the calling thread');
    expect((await parsing).rows).toHaveLength(400_000);
    expect(order).toEqual(['timer on the calling thread', 'parsed']);
  });

  // Issue 28: on two shared cores, a tenant's 8 MB uploads (parse, hash, store: 100 ms and more
  // each) took a core from every other project's requests in bursts.
  it("runs at a lower CPU priority than the api's own threads (Linux)", async () => {
    const before = new Set(threadsOfThisProcess().map((t) => t.tid));
    const fresh = new JsonThread();
    try {
      await fresh.parse(utf8('{}'));
      const started = threadsOfThisProcess().filter((t) => !before.has(t.tid) && t.name === 'WorkerThread');
      const main = threadsOfThisProcess().find((t) => t.tid === process.pid);
      expect(started).toHaveLength(1);
      expect(started[0].nice).toBe(Math.max(main!.nice, BULK_THREAD_NICE));
      expect(main!.nice).toBeLessThan(BULK_THREAD_NICE);
    } finally {
      await fresh.close();
    }
  });
});

/** This process's threads: Linux's task id, name and nice value of each (from /proc). */
function threadsOfThisProcess(): { tid: number; name: string; nice: number }[] {
  return readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    // After "pid (comm) ": state is field 3, nice field 19.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      tid: Number(tid),
      name: readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim(),
      nice: Number(fields[16]),
    };
  });
}

/** Runs `thread`'s body parser over `body` sent by an authenticated customer in `count` chunks
 * (each in a buffer of its own, as Node's HTTP parser gives them), or those chunks and then
 * `failure`; says whether anything else ran on this thread between the last byte read and the
 * parser's answer. `res` is the response it answers on. */
async function parseWith(
  thread: JsonThread,
  body: string,
  { count = 2, failure, res = {} as Response }: { count?: number; failure?: Error; res?: Response } = {},
): Promise<{ body: unknown; error: unknown; otherWorkRan: boolean; chunks: Uint8Array[] }> {
  const bytes = Buffer.from(body, 'utf8');
  const size = Math.ceil(bytes.length / count);
  const chunks = Array.from({ length: count }, (_, i) => new Uint8Array(bytes.subarray(i * size, (i + 1) * size)));
  const req = Object.assign(
    Readable.from(
      (function* () {
        yield* chunks;
        if (failure) throw failure;
      })(),
    ),
    {
      headers: {
        'content-type': 'application/json',
        'content-length': String(bytes.length),
        'idempotency-key': 'k',
      },
      principal: { projectId: 'p' },
    },
  ) as unknown as Request;
  let otherWorkRan = false;
  req.on('end', () => setImmediate(() => (otherWorkRan = true)));
  return new Promise((resolve) =>
    bodyParser(thread)(req, res, (error?: unknown) => resolve({ body: req.body, error, otherWorkRan, chunks })),
  );
}

describe('bodyParser', () => {
  const thread = new JsonThread();
  afterAll(() => thread.close());
  const parse = (body: string, options?: Parameters<typeof parseWith>[2]) => parseWith(thread, body, options);

  // Issue 28: an 8 MB upload parsed on the api's event loop held every other request behind it.
  it('parses a body over 256 KB off the event loop', async () => {
    const files = Array.from({ length: 2 }, (_, i) => ({ name: `f${i}.txt`, content: 'x'.repeat(700_000) }));
    const result = await parse(JSON.stringify({ message: 'hi', files }));
    expect(result.error).toBeUndefined();
    expect(result.body).toEqual({ message: 'hi', files });
    expect(result.otherWorkRan).toBe(true);
  });

  // Issue 28: joining an 8 MB body's chunks on the event loop (Buffer.concat into fresh memory,
  // page by page) held it 25 ms, in the noisy-neighbour phase's CPU profile of the api.
  it("hands a large body's chunks to the thread as they arrive, never joining them here", async () => {
    const files = [{ name: 'f.txt', content: 'x'.repeat(600_000) }];
    const result = await parse(JSON.stringify({ message: 'hi', files }), { count: 10 });
    expect(result.error).toBeUndefined();
    expect(result.body).toEqual({ message: 'hi', files });
    // Handed over, not copied: each chunk's buffer now belongs to the thread.
    expect(result.chunks.map((c) => c.byteLength)).toEqual(Array(10).fill(0));
  });

  it('answers a large body that stops before its end as aborted, and parses the next one', async () => {
    const failure = Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
    const result = await parse(JSON.stringify({ message: 'x'.repeat(600_000) }).slice(0, 400_000), { failure });
    expect(result.error).toMatchObject({ status: 400, type: 'request.aborted' });
    expect(result.body).toBeUndefined();
    await expect(parse(JSON.stringify({ message: 'y'.repeat(600_000) }))).resolves.toMatchObject({
      body: { message: 'y'.repeat(600_000) },
    });
  });

  // Issue 28: the Idempotency-Key's hash of an 8 MB body (its canonical form and SHA-256) held the
  // event loop 60-70 ms, measured in the noisy-neighbour phase's CPU profile of the api.
  it('hashes a body over 256 KB on the thread, as bodyHash would on the event loop', async () => {
    const files = Array.from({ length: 2 }, (_, i) => ({ name: `f${i}.txt`, content: 'é'.repeat(400_000) }));
    const result = await parse(JSON.stringify({ z: 1, message: 'hi', files }));
    const body = result.body as { message: string };
    const expected = bodyHash(JSON.parse(JSON.stringify({ files, message: 'hi', z: 1 })));
    expect(bodyHash(body)).toBe(expected);
    // The hash is the thread's, made when the body was parsed: the event loop does not hash again.
    body.message = 'changed after the parse';
    expect(bodyHash(body)).toBe(expected);
    expect(bodyHash(structuredClone(body))).not.toBe(expected);
  });

  it('hashes a small body on the event loop when asked, as before', async () => {
    const result = await parse('{"message":"hi"}');
    expect(bodyHash(result.body)).toBe(bodyHash({ message: 'hi' }));
    (result.body as { message: string }).message = 'changed';
    expect(bodyHash(result.body)).toBe(bodyHash({ message: 'changed' }));
  });

  it("answers an invalid large body with body-parser's error", async () => {
    const result = await parse(`{"message": "${'x'.repeat(1_100_000)}"`);
    expect(result.error).toMatchObject({ status: 400, type: 'entity.parse.failed' });
  });

  it('parses a small body as before, on the event loop', async () => {
    const result = await parse('{"message":"hi"}');
    expect(result).toMatchObject({ body: { message: 'hi' }, error: undefined, otherWorkRan: false });
  });
});

// Over the test database: the thread stores what it holds there.
describe("the files' long contents, held on the thread until stored", () => {
  const config = testConfig();
  const thread = new JsonThread({ databaseUrl: config.databaseUrl });
  let fixtures: Fixtures;
  let blobs: BlobStore;
  let projectId: string;
  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    blobs = new BlobStore(fixtures.db);
    projectId = (await fixtures.project()).project.id;
  });
  afterAll(async () => {
    await thread.close();
    await fixtures.close();
  });

  const long = 'é✓ 🙂 line\n'.repeat(60_000);
  const request = (files: { name: string; content: string }[]) => JSON.stringify({ message: 'Read them.', files });
  const answered = () => Object.assign(new EventEmitter(), { closed: false }) as unknown as Response;

  // Issue 28, session 18: an 8 MB upload cloned back from the thread as strings set off a full
  // collection of the api's heap (55-130 ms of its event loop) each time.
  it('keeps a long content on the thread: the event loop gets its bytes and text check, and the store runs there', async () => {
    const { body, error } = await parseWith(
      thread,
      request([
        { name: 'long.txt', content: long },
        { name: 'short.txt', content: 'short' },
      ]),
      { res: answered() },
    );
    expect(error).toBeUndefined();
    const files = (body as { files: { content: unknown }[] }).files;
    // Compared as booleans: a failure would otherwise print the whole content.
    expect(files[0].content instanceof HeldText).toBe(true);
    expect(files[0].content).toMatchObject({ bytes: Buffer.byteLength(long, 'utf8'), problem: undefined });
    expect(files[1].content).toBe('short');
    expect(JSON.stringify(body).includes('line')).toBe(false);

    const parsed = parseAgentRequest(body);
    expect(parsed.files.map((f) => [f.name, f.bytes])).toEqual([
      ['long.txt', Buffer.byteLength(long, 'utf8')],
      ['short.txt', 5],
    ]);
    const stored = await blobs.put(projectId, parsed.files[0].name, parsed.files[0].content, parsed.files[0].bytes);
    expect(stored.bytes).toBe(Buffer.byteLength(long, 'utf8'));
    expect(await blobs.get(stored.id, projectId)).toEqual({ name: 'long.txt', content: long });
  });

  it('hashes the body as sent, its held contents included', async () => {
    const sent = request([{ name: 'long.txt', content: long }]);
    const { body } = await parseWith(thread, sent, { res: answered() });
    expect(bodyHash(body)).toBe(bodyHash(JSON.parse(sent)));
  });

  it('stores a content once, and not once its request was answered', async () => {
    const res = answered();
    const first = await parseWith(thread, request([{ name: 'a.txt', content: long }]), { res });
    const [held] = thread.held(first.body);
    await blobs.put(projectId, 'a.txt', held);
    await expect(blobs.put(projectId, 'a.txt', held)).rejects.toThrow('no longer held');

    const second = await parseWith(thread, request([{ name: 'b.txt', content: long }]), { res });
    const [released] = thread.held(second.body);
    res.emit('close');
    await expect(blobs.put(projectId, 'b.txt', released)).rejects.toThrow('no longer held');
  });

  it('finds nothing held by a thread that stopped in the one after it, another request least of all', async () => {
    const restarted = new JsonThread({ databaseUrl: config.databaseUrl });
    const first = await parseWith(restarted, request([{ name: 'a.txt', content: long }]), { res: answered() });
    const [lost] = restarted.held(first.body);
    await restarted.close();
    await new Promise((resolve) => setImmediate(resolve));
    const second = await parseWith(restarted, request([{ name: 'b.txt', content: `${long}b` }]), {
      res: answered(),
    });
    try {
      await expect(blobs.put(projectId, 'a.txt', lost)).rejects.toThrow('no longer held');
      await expect(blobs.put(projectId, 'a.txt', lost)).rejects.toBeInstanceOf(JsonThreadLost);
      const stored = await blobs.put(projectId, 'b.txt', restarted.held(second.body)[0]);
      expect((await blobs.get(stored.id, projectId))?.content === `${long}b`).toBe(true);
    } finally {
      await restarted.close();
    }
  });

  // Session 20: these were plain errors, answered as 500 internal_error.
  it('fails a body it was parsing, when it stops, as lost (a 503 the client retries)', async () => {
    const stopping = new JsonThread({ databaseUrl: config.databaseUrl });
    const parsing = parseWith(stopping, request([{ name: 'a.txt', content: long }]), { res: answered() });
    await new Promise((resolve) => setImmediate(resolve));
    await stopping.close();
    expect((await parsing).error).toBeInstanceOf(JsonThreadLost);
  });

  it('fails a store while PostgreSQL cannot be reached as an outage (a 503 the client retries)', async () => {
    const unreachable = new JsonThread({ databaseUrl: 'postgres://mas@127.0.0.1:1/mas' });
    try {
      const { body } = await parseWith(unreachable, request([{ name: 'a.txt', content: long }]), { res: answered() });
      const failed = await blobs.put(projectId, 'a.txt', unreachable.held(body)[0]).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(Error);
      expect(isDatabaseUnavailable(failed)).toBe(true);
    } finally {
      await unreachable.close();
    }
  });

  it("finds a held content's text problems on the thread, and validation refuses it", async () => {
    const { body } = await parseWith(thread, request([{ name: 'nul.txt', content: `${long}\u0000` }]), {
      res: answered(),
    });
    expect(thread.held(body)[0].problem).toBe('a NUL character (\\u0000)');
    expect(() => parseAgentRequest(body)).toThrow('files[0].content contains a NUL character');
  });

  it('holds nothing shorter than HOLD_CHARS, nor anything but files[].content', async () => {
    const text = 'x'.repeat(HOLD_CHARS - 1);
    const { body } = await parseWith(
      thread,
      JSON.stringify({ message: 'y'.repeat(300_000), files: [{ name: 'f.txt', content: text }] }),
      { res: answered() },
    );
    expect(thread.held(body)).toEqual([]);
    expect(body).toEqual({ message: 'y'.repeat(300_000), files: [{ name: 'f.txt', content: text }] });
  });
});
