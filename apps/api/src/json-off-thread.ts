import { Worker } from 'node:worker_threads';

// The thread: decodes UTF-8 (a byte-order mark dropped, as body-parser's decoder does) and parses.
const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads');
const decoder = new TextDecoder('utf-8');
parentPort.on('message', ({ id, bytes }) => {
  let reply;
  try {
    reply = { id, value: JSON.parse(decoder.decode(bytes)) };
  } catch (e) {
    reply = { id, error: e instanceof Error ? e.message : String(e) };
  }
  parentPort.postMessage(reply);
});
`;

type Reply = { id: number; value: unknown } | { id: number; error: string };

/**
 * JSON parsed on a thread of its own, one body after another (the api's large bodies: an 8 MB
 * request of files held the event loop 16 ms in `JSON.parse` alone, and every other project's
 * request waited behind it; issue 28). The thread starts on first use and does not keep the
 * process alive; a thread that dies fails the bodies it held, and the next body starts another.
 */
export class JsonThread {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  /** The parsed value of `bytes` (UTF-8 JSON); rejects with the parser's SyntaxError message. */
  parse(bytes: Uint8Array): Promise<unknown> {
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Handed over, not copied, when the bytes are the whole of their buffer (a large body's are).
      const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
      worker.postMessage({ id, bytes }, whole && bytes.buffer instanceof ArrayBuffer ? [bytes.buffer] : []);
    });
  }

  /** Stops the thread (tests; the api's thread is unref'd and ends with the process). */
  async close(): Promise<void> {
    await this.worker?.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(THREAD_SOURCE, { eval: true });
    worker.on('message', (reply: Reply) => {
      const waiting = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if ('error' in reply) waiting?.reject(new SyntaxError(reply.error));
      else waiting?.resolve(reply.value);
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
