import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { formatBytes } from '../files/tool-file.util.js';
import { threadSlots } from '../thread-slots.js';
import { THREAD_WALL_LIMIT_MS, watchThreadTime } from '../thread-time.js';

/** The bounds of reading a PDF's text (issue 28: a crafted PDF must not stall the worker). */
export interface PdfLimits {
  /** Largest PDF parsed, in bytes; a larger one is refused before parsing (default 32 MiB). */
  readonly maxBytes: number;
  /** Most pages read (default 2,000). */
  readonly maxPages: number;
  /** Longest a reading may take, in ms of its thread's CPU time; the thread is then stopped (default 10 s). */
  readonly timeoutMs: number;
  /** The reading thread's JavaScript heap, in MB (default 256). */
  readonly maxHeapMb: number;
  /** What the PDF's compressed streams may inflate to in all, in bytes (default 128 MiB): a
   * decompression bomb is refused before pdf.js inflates it outside the heap limit. */
  readonly maxInflatedBytes: number;
}

export const PDF_LIMITS: PdfLimits = {
  maxBytes: 32 * 1024 * 1024,
  maxPages: 2000,
  timeoutMs: 10_000,
  maxHeapMb: 256,
  maxInflatedBytes: 128 * 1024 * 1024,
};

/** PDFs read at the same time in one process; more wait for a free thread (the machine has 2 cores). */
const CONCURRENCY = 2;

/** The worker's file: compiled next to this one in dist/, the TypeScript source under tests (Node strips its types). */
const WORKER_FILE = ((): string => {
  const compiled = fileURLToPath(new URL('./pdf-text.worker.js', import.meta.url));
  return existsSync(compiled) ? compiled : fileURLToPath(new URL('./pdf-text.worker.ts', import.meta.url));
})();

const slot = threadSlots(CONCURRENCY);

/**
 * The text of a PDF, page by page, with "--- page N ---" separators. Read off the calling thread,
 * in a worker thread of its own with a heap limit and a time limit, at most two at a time: a PDF
 * bomb or a huge PDF costs that thread, never the thread that runs the workflows and activities.
 * Throws, with the reason, for a PDF refused (too large, too many pages, too slow, too much
 * memory) or unreadable; the tools answer that as a tool error and the run goes on.
 */
export async function pdfToText(
  bytes: Uint8Array,
  limits: PdfLimits = PDF_LIMITS,
): Promise<{ pages: number; text: string }> {
  if (bytes.length > limits.maxBytes)
    throw new Error(`it is ${formatBytes(bytes.length)}; PDFs over ${formatBytes(limits.maxBytes)} are not read`);
  const release = await slot();
  const worker = new Worker(WORKER_FILE, {
    // A copy, because pdf.js may detach the buffer it is given.
    workerData: { bytes: new Uint8Array(bytes), maxPages: limits.maxPages, maxInflatedBytes: limits.maxInflatedBytes },
    resourceLimits: { maxOldGenerationSizeMb: limits.maxHeapMb, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
    stdout: true,
    stderr: true,
  });
  worker.stdout.resume();
  worker.stderr.resume();
  let unwatch: (() => void) | undefined;
  try {
    return await new Promise<{ pages: number; text: string }>((resolve, reject) => {
      unwatch = watchThreadTime(worker, { cpuMs: limits.timeoutMs, wallMs: THREAD_WALL_LIMIT_MS }, (why) =>
        reject(
          new Error(
            why === 'cpu'
              ? `reading it took more than ${limits.timeoutMs / 1000} s`
              : `the reader did not answer within ${THREAD_WALL_LIMIT_MS / 1000} s (the machine is overloaded)`,
          ),
        ),
      );
      worker.once('message', (m: { pages: number; text: string } | { refused: string }) =>
        'refused' in m ? reject(new Error(m.refused)) : resolve(m),
      );
      worker.once('error', (e: Error & { code?: string }) =>
        reject(
          e.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? new Error(`reading it needed more than ${limits.maxHeapMb} MB of memory`)
            : e,
        ),
      );
      worker.once('exit', (code) => reject(new Error(`the reader stopped (exit code ${code})`)));
    });
  } finally {
    unwatch?.();
    await worker.terminate();
    release();
  }
}
