import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { threadSlots } from '../thread-slots.js';
import { THREAD_WALL_LIMIT_MS, watchThreadTime } from '../thread-time.js';
import { defineTool } from '../tool-definition.js';
import { errorMessage, toolError, toolOk, withDefaults, type ToolDefinition } from '../tool.js';
import type { RunJavascriptReply } from './run-javascript.worker.js';

/** Operator limits of run_javascript. */
export interface RunJavascriptOptions {
  /** Heap of the QuickJS runtime, in bytes (default 32 MiB). */
  readonly memoryLimitBytes?: number;
  /** Limit of evaluation and promise jobs, in ms of the sandbox thread's CPU time (default 2000). */
  readonly timeoutMs?: number;
  /** Interpreter stack, in bytes (default 256 KiB); the host thread's own stack must hold it too. */
  readonly maxStackBytes?: number;
  /** Captured console output kept, in characters (default 20,000). */
  readonly maxConsoleChars?: number;
  /** JSON of the final value kept, in characters (default 20,000). */
  readonly maxValueChars?: number;
}

/** Defaults of run_javascript's limits. */
export const RUN_JAVASCRIPT_DEFAULTS = {
  memoryLimitBytes: 32 * 1024 * 1024,
  timeoutMs: 2000,
  maxStackBytes: 256 * 1024,
  maxConsoleChars: 20_000,
  maxValueChars: 20_000,
} as const;

/** Longest program accepted, in characters. */
export const RUN_JAVASCRIPT_MAX_CODE_CHARS = 100_000;

/** The worker's file: compiled next to this one in dist/, the TypeScript source under tests (Node strips its types). */
const WORKER_FILE = ((): string => {
  const compiled = fileURLToPath(new URL('./run-javascript.worker.js', import.meta.url));
  return existsSync(compiled) ? compiled : fileURLToPath(new URL('./run-javascript.worker.ts', import.meta.url));
})();

/** Calls run at the same time in one process; more wait for a free thread (the machine has 2 cores). */
const slots = threadSlots(2);

/** Past its own limit (checked inside QuickJS), a call's thread may use this much more CPU time
 * before it is stopped; loading QuickJS into the thread counts here too. */
const STOP_GRACE_MS = 3000;

interface RunJavascriptArgs {
  readonly code: string;
}

/** `run_javascript` (code): evaluates JavaScript in a fresh QuickJS (WebAssembly) sandbox with
 * memory and time limits, in a worker thread of its own (run-javascript.worker.ts): a script that
 * loops for its whole time limit holds that thread, never the one that runs workflows and activities. */
export const runJavascriptTool: ToolDefinition<RunJavascriptOptions> = defineTool<
  RunJavascriptArgs,
  RunJavascriptOptions
>(
  'code',
  {
    name: 'run_javascript',
    description:
      'Run JavaScript (ES2023) in an isolated sandbox and get back what it printed with console.log and the value of its ' +
      'last expression (as JSON). Use it for calculations, data transformation and checking logic. ' +
      'No require/import, no network, no file system, no timers; limits: 2 seconds and 32 MB. ' +
      'End the script with an expression (e.g. `result`) to return a value.',
    parameters: {
      type: 'object',
      properties: {
        code: {
          type: 'string',
          minLength: 1,
          maxLength: RUN_JAVASCRIPT_MAX_CODE_CHARS,
          description: 'The JavaScript source to run as a script.',
        },
      },
      required: ['code'],
      additionalProperties: false,
    },
  },
  async (args, { options, signal }) => {
    const limits = withDefaults<RunJavascriptOptions>(RUN_JAVASCRIPT_DEFAULTS, options);
    const release = await slots();
    const worker = new Worker(WORKER_FILE, { workerData: { code: args.code, limits }, stdout: true, stderr: true });
    worker.stdout.resume();
    worker.stderr.resume();
    let unwatch: (() => void) | undefined;
    let onAbort: (() => void) | undefined;
    try {
      const reply = await new Promise<RunJavascriptReply>((resolve) => {
        const stop = (text: string) => resolve({ ok: false, text });
        onAbort = () => stop('JavaScript execution was cancelled.');
        if (signal?.aborted) onAbort();
        signal?.addEventListener('abort', onAbort, { once: true });
        unwatch = watchThreadTime(
          worker,
          { cpuMs: limits.timeoutMs + STOP_GRACE_MS, wallMs: THREAD_WALL_LIMIT_MS },
          (why) =>
            stop(
              why === 'cpu'
                ? `JavaScript timed out: the script ran longer than the ${limits.timeoutMs} ms limit and was stopped.`
                : `JavaScript could not run: the sandbox did not answer within ${THREAD_WALL_LIMIT_MS / 1000} s (the machine is overloaded); try again.`,
            ),
        );
        worker.once('message', resolve);
        worker.once('error', (e) => stop(`JavaScript could not run: ${errorMessage(e)}`));
        worker.once('exit', (code) => stop(`JavaScript could not run: the sandbox stopped (exit code ${code}).`));
      });
      return reply.ok ? toolOk(reply.text) : toolError(reply.text);
    } finally {
      unwatch?.();
      if (onAbort) signal?.removeEventListener('abort', onAbort);
      await worker.terminate();
      release();
    }
  },
);
