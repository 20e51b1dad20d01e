// Large request bodies, parsed and hashed off the api's event loop, and the contents of their
// files kept off it until stored (issue 28). This file is also the thread's own: self-contained
// (Node's modules, and pg on the thread) and in TypeScript that Node can strip, so the same file
// runs from dist/ (compiled) and from the sources (tests), as pdf-text.worker.ts does.
import { createHash, randomUUID } from 'node:crypto';
import { getPriority, setPriority } from 'node:os';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { HeldContent } from '#libs/persistence';
import type { Pool } from 'pg';

/** A canonical JSON form (object keys sorted), so the same parsed body hashes the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** SHA-256 of the canonical JSON of a parsed body (no body at all counts as `{}`). */
const hashOf = (body: unknown): string =>
  createHash('sha256')
    .update(canonicalJson(body ?? {}))
    .digest('hex');

/** The hashes of bodies the thread parsed, computed there with them. */
const hashedOffThread = new WeakMap<object, string>();

/** SHA-256 of the canonical JSON of a parsed body (no body at all counts as `{}`): what an
 * Idempotency-Key is bound to. A body parsed by JsonThread brings its hash from the thread: for an
 * 8 MB body the canonical form and its hash held the event loop 60-70 ms, and every other
 * project's request waited behind it (issue 28, the noisy neighbour's uploads). */
export function bodyHash(body: unknown): string {
  const known = typeof body === 'object' && body !== null ? hashedOffThread.get(body) : undefined;
  return known ?? hashOf(body);
}

// A surrogate half without its partner: no UTF-8 encoding exists for it.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `text` cannot be stored or sent on as text, or undefined: PostgreSQL's `text` and `jsonb`
 * refuse NUL, and an unpaired UTF-16 surrogate has no UTF-8 form. */
export function textProblem(text: string): string | undefined {
  if (text.includes('\u0000')) return 'a NUL character (\\u0000)';
  if (LONE_SURROGATE.test(text)) return 'an unpaired UTF-16 surrogate';
  return undefined;
}

/** A `files[].content` of this many UTF-16 units or more stays on the thread that parsed it. */
export const HOLD_CHARS = 64 * 1024;

/** What the thread is told to be (workerData), so that importing this file elsewhere does nothing;
 * and the database it stores the contents it holds in. */
const THREAD = 'mas-json-thread';
/** The thread's CPU priority (nice), as the bulkhead's worker's (scripts/app-process.mjs). */
export const BULK_THREAD_NICE = 10;
type ThreadData = { thread: typeof THREAD; databaseUrl?: string };

/** A file's content held on the thread: where it was in the body, and what validation needs of it. */
type Held = { file: number; held: string; bytes: number; problem?: string };

/** A failed body, insert or store: `code` is the driver error's (a socket error or a SQLSTATE), so
 * that a database outage reads as one; `lost` says the content was no longer held. */
type Reply =
  | { id: number; value: unknown; hash?: string; held?: Held[] }
  | { id: number; error: string; syntax?: true; code?: string; lost?: true };

/** To the thread: a chunk of body `id`; its end (parse it, and hash it when asked); its drop (the
 * request was aborted); the insert that stores a content it holds (as parameter `at`); or the
 * contents it may let go of (their request was answered). */
type Message =
  | { id: number; chunk: Uint8Array }
  | { id: number; end: true; hash: boolean }
  | { id: number; drop: true }
  | { id: number; insert: string; sql: string; params: unknown[]; at: number }
  | { release: string[] };

// The thread: gathers each body's chunks as they arrive, then decodes UTF-8 (a byte-order mark
// dropped, as body-parser's decoder does), parses, and, when asked, hashes what it parsed as
// bodyHash does. Given a database, it keeps each long `files[].content` of what it parsed and
// sends the rest: the content's UTF-8 bytes and its textProblem go in its place, and the insert
// that stores it runs here, over a connection of the thread's own.
if (!isMainThread && (workerData as ThreadData | undefined)?.thread === THREAD && parentPort) {
  // A large body's parse, hash and store are one tenant's bulk work: on a core they share, the
  // threads of every project's requests come first (Linux: a thread's own nice value; elsewhere
  // setpriority would lower the whole process, so it is left as it is).
  if (process.platform === 'linux') setPriority(0, Math.max(getPriority(0), BULK_THREAD_NICE));
  const port = parentPort;
  const { databaseUrl } = workerData as ThreadData;
  const decoder = new TextDecoder('utf-8');
  const bodies = new Map<number, Uint8Array[]>();
  // By an id unique across threads: a HeldText of a thread that died must find nothing in the next.
  const contents = new Map<string, string>();
  let pool: Promise<Pool> | undefined;
  const database = () =>
    (pool ??= import('pg').then(({ default: pg }) => {
      const created = new pg.Pool({ connectionString: databaseUrl, max: 2 });
      // An idle connection's error (the server restarted) drops it; the next insert opens another.
      created.on('error', () => undefined);
      return created;
    }));
  const hold = (value: unknown): Held[] => {
    const files = typeof value === 'object' && value !== null ? (value as { files?: unknown }).files : undefined;
    if (!databaseUrl || !Array.isArray(files)) return [];
    const held: Held[] = [];
    files.forEach((file: { content?: unknown } | null, i) => {
      const content = typeof file === 'object' && file !== null ? file.content : undefined;
      if (typeof content !== 'string' || content.length < HOLD_CHARS) return;
      const id = randomUUID();
      contents.set(id, content);
      const problem = textProblem(content);
      held.push({ file: i, held: id, bytes: Buffer.byteLength(content, 'utf8'), ...(problem ? { problem } : {}) });
      file!.content = null;
    });
    return held;
  };
  const insert = async (id: number, content: string, sql: string, params: unknown[], at: number) => {
    let reply: Reply;
    try {
      await (await database()).query(sql, params.with(at, content));
      reply = { id, value: null };
    } catch (e) {
      const code = (e as { code?: unknown } | null)?.code;
      reply = { id, error: e instanceof Error ? e.message : String(e), ...(typeof code === 'string' ? { code } : {}) };
    }
    port.postMessage(reply);
  };
  port.on('message', (message: Message) => {
    if ('release' in message) {
      for (const held of message.release) contents.delete(held);
      return;
    }
    const { id } = message;
    if ('insert' in message) {
      const content = contents.get(message.insert);
      contents.delete(message.insert);
      if (content === undefined)
        port.postMessage({
          id,
          error: "the file's content is no longer held: its request was answered, or the thread that held it stopped",
          lost: true,
        } satisfies Reply);
      else void insert(id, content, message.sql, message.params, message.at);
      return;
    }
    if ('chunk' in message) {
      const chunks = bodies.get(id);
      if (chunks) chunks.push(message.chunk);
      else bodies.set(id, [message.chunk]);
      return;
    }
    const chunks = bodies.get(id) ?? [];
    bodies.delete(id);
    if ('drop' in message) return;
    let reply: Reply;
    try {
      const bytes = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      const value: unknown = JSON.parse(decoder.decode(bytes));
      // The hash covers the body as sent, before its contents are taken out.
      const hash = message.hash ? hashOf(value) : undefined;
      const held = hold(value);
      reply = { id, value, ...(hash ? { hash } : {}), ...(held.length ? { held } : {}) };
    } catch (e) {
      reply = { id, error: e instanceof Error ? e.message : String(e), syntax: true };
    }
    port.postMessage(reply);
  });
}

/**
 * A file's content that stayed on the JSON thread: the api's event loop gets its UTF-8 bytes and
 * its textProblem, and the thread runs the insert that stores it (BlobStore.put). As strings on
 * the api's heap, an upload of 8 MB set off a full collection of that heap (55-130 ms of the event
 * loop) each time, and every other project's request waited behind it (issue 28, session 18).
 */
export class HeldText implements HeldContent {
  readonly #thread: JsonThread;
  readonly #held: string;
  /** The content's UTF-8 bytes. */
  readonly bytes: number;
  /** Its textProblem, if any. */
  readonly problem: string | undefined;

  // No parameter properties here or below: Node strips this file's types and has none.
  constructor(thread: JsonThread, held: string, bytes: number, problem: string | undefined) {
    this.#thread = thread;
    this.#held = held;
    this.bytes = bytes;
    this.problem = problem;
  }

  /** The id the thread knows the content by (JsonThread.release). */
  get held(): string {
    return this.#held;
  }

  insert(sql: string, params: readonly unknown[], at: number): Promise<void> {
    return this.#thread.insert(this.#held, sql, params, at);
  }
}

/** A body the JSON thread was parsing, or a content it held, lost with the thread (it stopped), or
 * a content asked for after its request was answered. Nothing of the request was run; its client
 * may send it again (the api answers 503, contract-exception.filter.ts). */
export class JsonThreadLost extends Error {}

/** This file, compiled (dist/) or its source (tests: Node strips its types). */
const THREAD_FILE = fileURLToPath(import.meta.url);

/**
 * JSON parsed (and hashed, bodyHash) on a thread of its own, one body after another: the api's
 * large bodies. An 8 MB request of files held the event loop 16 ms in `JSON.parse` alone, and
 * every other project's request waited behind it (issue 28). Given the database, the thread also
 * keeps the long contents of the body's `files` (HeldText) until they are stored or their request
 * is answered (release). The thread starts on first use and does not keep the process alive; a
 * thread that dies fails the bodies and inserts it had, and the next body starts another.
 */
export class JsonThread {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  /** The contents each parsed body left on the thread. */
  private readonly heldIn = new WeakMap<object, HeldText[]>();
  private readonly databaseUrl: string | undefined;

  /** `databaseUrl`: where the thread stores the contents it holds; without it, it holds none. */
  constructor({ databaseUrl }: { databaseUrl?: string } = {}) {
    this.databaseUrl = databaseUrl;
  }

  /** The parsed value of `bytes` (UTF-8 JSON); rejects with the parser's SyntaxError message.
   * With `hash` (the request has an Idempotency-Key), bodyHash of the value is made here too. */
  parse(bytes: Uint8Array, { hash = false }: { hash?: boolean } = {}): Promise<unknown> {
    return this.body(hash, (send, end) => {
      send(bytes);
      end();
    });
  }

  /** The parsed value of the UTF-8 JSON body `stream` reads, as parse does. Each chunk goes to the
   * thread as it arrives, so the event loop never joins the body: joining an 8 MB body's chunks
   * (fresh memory, page by page) held it 25 ms (issue 28). A stream that fails or closes before
   * its end rejects with body-parser's `request.aborted`, and the thread drops what it had. */
  read(stream: Readable, { hash = false }: { hash?: boolean } = {}): Promise<unknown> {
    return this.body(hash, (send, end, drop) => {
      let ended = false;
      const onData = (chunk: Uint8Array) => send(chunk);
      const stop = () => {
        stream.off('data', onData);
        stream.off('error', aborted);
        stream.off('close', aborted);
      };
      const aborted = () => {
        if (ended) return;
        ended = true;
        stop();
        drop(Object.assign(new Error('request aborted'), { status: 400, type: 'request.aborted' }));
      };
      stream.on('data', onData);
      stream.once('end', () => {
        if (ended) return;
        ended = true;
        stop();
        end();
      });
      stream.once('error', aborted);
      stream.once('close', aborted);
    });
  }

  /** One body's way through the thread: `feed` sends its chunks (each handed over, not copied,
   * when it is the whole of its buffer, as a request's body chunks are), then ends it or drops it. */
  private body(
    hash: boolean,
    feed: (send: (chunk: Uint8Array) => void, end: () => void, drop: (error: Error) => void) => void,
  ): Promise<unknown> {
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const post = (message: Message, transfer: ArrayBuffer[] = []) => worker.postMessage(message, transfer);
      feed(
        (chunk) => {
          const whole = chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength;
          post({ id, chunk }, whole && chunk.buffer instanceof ArrayBuffer ? [chunk.buffer] : []);
        },
        () => post({ id, end: true, hash }),
        (error) => {
          post({ id, drop: true });
          this.pending.delete(id);
          reject(error);
        },
      );
    });
  }

  /** Runs `sql` on the thread with the content it holds as `held` as parameter `at` (HeldText). A
   * content is stored once: it is let go of as the insert starts. */
  insert(held: string, sql: string, params: readonly unknown[], at: number): Promise<void> {
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: () => resolve(), reject });
      worker.postMessage({ id, insert: held, sql, params: [...params], at } satisfies Message);
    });
  }

  /** The contents of `body` (a value this thread parsed) held on the thread, if any. */
  held(body: unknown): readonly HeldText[] {
    return (typeof body === 'object' && body !== null && this.heldIn.get(body)) || [];
  }

  /** Lets the thread drop what it still holds of `body`: call it once its request was answered. */
  release(body: unknown): void {
    const held = this.held(body);
    if (held.length > 0) this.worker?.postMessage({ release: held.map((h) => h.held) } satisfies Message);
  }

  /** Stops the thread (tests; the api's thread is unref'd and ends with the process). */
  async close(): Promise<void> {
    await this.worker?.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const workerData: ThreadData = { thread: THREAD, databaseUrl: this.databaseUrl };
    const worker = new Worker(THREAD_FILE, { workerData });
    worker.on('message', (reply: Reply) => {
      const waiting = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if ('error' in reply) {
        if (reply.syntax) return waiting?.reject(new SyntaxError(reply.error));
        if (reply.lost) return waiting?.reject(new JsonThreadLost(reply.error));
        return waiting?.reject(Object.assign(new Error(reply.error), reply.code ? { code: reply.code } : {}));
      }
      const { value } = reply;
      if (reply.hash && value && typeof value === 'object') hashedOffThread.set(value, reply.hash);
      if (reply.held) {
        const files = (value as { files: { content: unknown }[] }).files;
        const held = reply.held.map((h) => (files[h.file].content = new HeldText(this, h.held, h.bytes, h.problem)));
        this.heldIn.set(value as object, held);
      }
      waiting?.resolve(value);
    });
    const fail = (e: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const waiting of this.pending.values()) waiting.reject(e);
      this.pending.clear();
    };
    worker.on('error', (e) => fail(new JsonThreadLost(`the JSON thread failed: ${e.message}`)));
    worker.on('exit', (code) => fail(new JsonThreadLost(`the JSON thread stopped (exit code ${code})`)));
    // After the listeners: adding a 'message' listener refs the thread's port again.
    worker.unref();
    this.worker = worker;
    return worker;
  }
}
