// Large request bodies, parsed and hashed off the api's event loop (issue 28). This file is also
// the thread's own: self-contained (only Node's modules) and in TypeScript that Node can strip, so
// the same file runs from dist/ (compiled) and from the sources (tests), as pdf-text.worker.ts does.
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

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

/** What the thread is told to be (workerData), so that importing this file elsewhere does nothing. */
const THREAD = 'mas-json-thread';

type Reply = { id: number; value: unknown; hash?: string } | { id: number; error: string };

/** To the thread: a chunk of body `id`; its end (parse it, and hash it when asked); or its drop
 * (the request was aborted). */
type Message =
  { id: number; chunk: Uint8Array } | { id: number; end: true; hash: boolean } | { id: number; drop: true };

// The thread: gathers each body's chunks as they arrive, then decodes UTF-8 (a byte-order mark
// dropped, as body-parser's decoder does), parses, and, when asked, hashes what it parsed as
// bodyHash does.
if (!isMainThread && workerData === THREAD && parentPort) {
  const port = parentPort;
  const decoder = new TextDecoder('utf-8');
  const bodies = new Map<number, Uint8Array[]>();
  port.on('message', (message: Message) => {
    const { id } = message;
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
      reply = message.hash ? { id, value, hash: hashOf(value) } : { id, value };
    } catch (e) {
      reply = { id, error: e instanceof Error ? e.message : String(e) };
    }
    port.postMessage(reply);
  });
}

/** This file, compiled (dist/) or its source (tests: Node strips its types). */
const THREAD_FILE = fileURLToPath(import.meta.url);

/**
 * JSON parsed (and hashed, bodyHash) on a thread of its own, one body after another: the api's
 * large bodies. An 8 MB request of files held the event loop 16 ms in `JSON.parse` alone, and
 * every other project's request waited behind it (issue 28). The thread starts on first use and
 * does not keep the process alive; a thread that dies fails the bodies it held, and the next body
 * starts another.
 */
export class JsonThread {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

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

  /** Stops the thread (tests; the api's thread is unref'd and ends with the process). */
  async close(): Promise<void> {
    await this.worker?.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(THREAD_FILE, { workerData: THREAD });
    worker.on('message', (reply: Reply) => {
      const waiting = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if ('error' in reply) return waiting?.reject(new SyntaxError(reply.error));
      if (reply.hash && reply.value && typeof reply.value === 'object') hashedOffThread.set(reply.value, reply.hash);
      waiting?.resolve(reply.value);
    });
    const fail = (e: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const waiting of this.pending.values()) waiting.reject(e);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the JSON thread stopped (exit code ${code})`)));
    // After the listeners: adding a 'message' listener refs the thread's port again.
    worker.unref();
    this.worker = worker;
    return worker;
  }
}
