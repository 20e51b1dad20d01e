// The worker thread that runs one run_javascript call (run-javascript.tool.ts starts one per call,
// at most two at a time, and stops it when the call is cancelled or overruns its limit): QuickJS
// evaluation is synchronous, and a script may hold its thread for the whole time limit, so it never
// runs on the thread that runs the workflows and activities (issue 28). Self-contained, like
// pdf-text.worker.ts: no import of the service's modules, and only TypeScript that Node can strip,
// so that the same file runs from dist/ (compiled) and from the sources (tests).
import { parentPort, workerData } from 'node:worker_threads';
import type {
  EmscriptenModuleLoaderOptions,
  QuickJSContext,
  QuickJSHandle,
  QuickJSRuntime,
  QuickJSSyncVariant,
} from 'quickjs-emscripten';

/** The limits of one call (RUN_JAVASCRIPT_DEFAULTS laid under the operator's options). */
interface Limits {
  readonly memoryLimitBytes: number;
  readonly timeoutMs: number;
  readonly maxStackBytes: number;
  readonly maxConsoleChars: number;
  readonly maxValueChars: number;
}

/** What the thread posts back: the tool's result text, ok or not. */
export interface RunJavascriptReply {
  readonly ok: boolean;
  readonly text: string;
}

type Outcome = { readonly ok: true; readonly value: string } | { readonly ok: false; readonly error: string };

const FILE_NAME = 'main.js';
const SANDBOX_NOTE =
  'The sandbox runs plain JavaScript (ES2023) with console.log only: there is no require, import, process, fetch, ' +
  'timers, file system or network.';
// Names a model reaches for out of Node or browser habit; their ReferenceError gets the sandbox note.
const HOST_ONLY_NAMES = new Set([
  'require',
  'process',
  'fetch',
  'module',
  'exports',
  '__dirname',
  '__filename',
  'Buffer',
  'global',
  'setTimeout',
  'setInterval',
  'setImmediate',
  'clearTimeout',
  'clearInterval',
  'queueMicrotask',
  'XMLHttpRequest',
  'WebSocket',
  'Deno',
  'Bun',
  'window',
  'document',
  'navigator',
  'std',
  'os',
  'structuredClone',
  'TextEncoder',
  'TextDecoder',
  'URL',
]);
const MAX_PENDING_JOB_BATCHES = 10_000;
const STACK_OVERFLOW = 'JavaScript stack overflow: too much recursion (maximum call stack size exceeded).';
// Emscripten prints a QuickJS abort to stderr before throwing it; the throw is handled here.
// quickjs-emscripten is loaded on first use, not with the worker.
let silentReleaseSync: Promise<QuickJSSyncVariant> | undefined;
const quickJsModule = async () => {
  const quickjs = await import('quickjs-emscripten');
  silentReleaseSync ??= Promise.resolve(
    quickjs.newVariant(quickjs.RELEASE_SYNC, {
      emscriptenModule: { print: () => undefined, printErr: () => undefined } as EmscriptenModuleLoaderOptions,
    }),
  );
  return quickjs.newQuickJSWASMModule(await silentReleaseSync);
};

/** The CPU time this thread has used, in ms: the script's limit counts time computing, not time
 * waiting for a core on a busy machine (Node >= 24; the installed @types/node lacks it). */
function threadCpuMs(): number {
  const used = (process as unknown as { threadCpuUsage(): NodeJS.CpuUsage }).threadCpuUsage();
  return (used.user + used.system) / 1000;
}

function boundText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n[truncated: ${text.length - maxChars} more characters not shown]`;
}

function errorMessage(e: unknown): string {
  if (typeof e === 'object' && e !== null && typeof (e as { message?: unknown }).message === 'string')
    return (e as { message: string }).message;
  return typeof e === 'string' ? e : (JSON.stringify(e) ?? String(e));
}

/** Evaluates `code` in a fresh QuickJS runtime within `limits`. */
async function run(code: string, limits: Limits): Promise<RunJavascriptReply> {
  // A fresh WebAssembly module per call: a QuickJS abort (seen when freeing a runtime after an
  // out-of-memory error) poisons only this instance, never the next call or the host.
  const module = await quickJsModule();
  const console = new ConsoleCapture(limits.maxConsoleChars);
  let runtime: QuickJSRuntime | undefined;
  let context: QuickJSContext | undefined;
  try {
    runtime = module.newRuntime();
    runtime.setMemoryLimit(limits.memoryLimitBytes);
    runtime.setMaxStackSize(limits.maxStackBytes);
    const deadline = threadCpuMs() + limits.timeoutMs;
    runtime.setInterruptHandler(() => threadCpuMs() > deadline);
    context = runtime.newContext();
    const outcome = evaluateGuarded(context, runtime, code, console, limits, deadline);
    const printed = console.text();
    if (!outcome.ok)
      return {
        ok: false,
        text: printed ? `${outcome.error}\nConsole output before the error:\n${printed}` : outcome.error,
      };
    return {
      ok: true,
      text: `${printed ? `Console output:\n${printed}\n` : 'Console output: (none)\n'}Result: ${outcome.value}`,
    };
  } finally {
    safely(() => context?.dispose());
    safely(() => runtime?.dispose());
  }
}

function evaluateGuarded(...args: Parameters<typeof evaluate>): Outcome {
  try {
    return evaluate(...args);
  } catch (e) {
    // The WebAssembly frames can exhaust the host's stack before QuickJS's own check fires.
    if (/call stack/i.test(errorMessage(e))) return { ok: false, error: STACK_OVERFLOW };
    throw e;
  }
}

function evaluate(
  context: QuickJSContext,
  runtime: QuickJSRuntime,
  code: string,
  console: ConsoleCapture,
  limits: Limits,
  deadline: number,
): Outcome {
  const handles: QuickJSHandle[] = [];
  try {
    // Taken before the script runs, so redefining JSON.stringify cannot change how the result is read.
    const json = context.getProp(context.global, 'JSON');
    handles.push(json);
    const stringify = context.getProp(json, 'stringify');
    handles.push(stringify);
    installConsole(context, console);

    const result = context.evalCode(code, FILE_NAME, { type: 'global' });
    if (result.error) {
      handles.push(result.error);
      const error = describeThrown(context, result.error, limits, 'Uncaught');
      return {
        ok: false,
        error:
          /^Uncaught SyntaxError/.test(error) && /^\s*(import|export)\b/m.test(code)
            ? `${error}. ${SANDBOX_NOTE}`
            : error,
      };
    }
    handles.push(result.value);

    const jobsFailure = drainJobs(context, runtime, deadline, limits);
    if (jobsFailure) return { ok: false, error: jobsFailure };

    let final = result.value;
    if (context.typeof(final) === 'object') {
      const state = context.getPromiseState(final);
      if (state.type === 'pending') {
        return {
          ok: false,
          error: 'The script ended with a Promise that never settled (the sandbox has no timers or I/O to wait for).',
        };
      }
      if (state.type === 'rejected') {
        handles.push(state.error);
        return { ok: false, error: describeThrown(context, state.error, limits, 'Uncaught (in promise)') };
      }
      if (!state.notAPromise) {
        handles.push(state.value);
        final = state.value;
      }
    }
    return { ok: true, value: stringifyResult(context, stringify, final, limits) };
  } finally {
    for (const handle of handles.reverse()) safely(() => handle.dispose());
  }
}

function drainJobs(
  context: QuickJSContext,
  runtime: QuickJSRuntime,
  deadline: number,
  limits: Limits,
): string | undefined {
  for (let batch = 0; runtime.hasPendingJob(); batch++) {
    if (threadCpuMs() > deadline || batch >= MAX_PENDING_JOB_BATCHES) return timeoutMessage(limits);
    const jobs = runtime.executePendingJobs(1000);
    if (jobs.error) {
      const message = describeThrown(context, jobs.error, limits, 'Uncaught (in promise)');
      safely(() => jobs.error.dispose());
      return message;
    }
  }
  return undefined;
}

function stringifyResult(
  context: QuickJSContext,
  stringify: QuickJSHandle,
  value: QuickJSHandle,
  limits: Limits,
): string {
  const kind = context.typeof(value);
  if (kind === 'undefined') return 'undefined';
  if (kind === 'function') return '[function]';
  if (kind === 'symbol') return '[symbol]';
  if (kind === 'bigint') return boundText(`${context.getBigInt(value).toString()}n`, limits.maxValueChars);
  const json = context.callFunction(stringify, context.undefined, value);
  if (json.error) {
    const message = describeThrown(context, json.error, limits, 'Could not serialise the result:');
    safely(() => json.error.dispose());
    return `[unserialisable value] ${message}`;
  }
  try {
    const text = context.typeof(json.value) === 'string' ? context.getString(json.value) : 'undefined';
    return boundText(text, limits.maxValueChars);
  } finally {
    safely(() => json.value.dispose());
  }
}

/** Turns a QuickJS exception into the one clear sentence the model needs. */
function describeThrown(context: QuickJSContext, error: QuickJSHandle, limits: Limits, prefix: string): string {
  const { name, message, stack } = readError(context, error);
  if (name === 'InternalError' && message === 'interrupted') return timeoutMessage(limits);
  if (message === 'out of memory' || message === 'string too long' || message === 'invalid array length') {
    return `JavaScript ran out of memory: the sandbox is limited to ${Math.round(limits.memoryLimitBytes / (1024 * 1024))} MB (${message}).`;
  }
  if (message === 'stack overflow') return STACK_OVERFLOW;
  const where = locationOf(stack);
  const text = `${prefix} ${name ? `${name}: ` : ''}${message}${where ? ` (at ${where})` : ''}`;
  const missing = /^'([\w$]+)' is not defined$/.exec(message)?.[1];
  if (
    (name === 'ReferenceError' && missing !== undefined && HOST_ONLY_NAMES.has(missing)) ||
    /could not load module/.test(message)
  ) {
    return `${text}. ${SANDBOX_NOTE}`;
  }
  return text;
}

// Reads properties one by one rather than dumping as JSON: after a stack overflow the sandbox
// may be unable to run JSON.stringify, while plain property reads still work.
function readError(context: QuickJSContext, error: QuickJSHandle): { name: string; message: string; stack: string } {
  try {
    if (context.typeof(error) !== 'object') {
      const value: unknown = context.dump(error);
      return { name: '', message: typeof value === 'string' ? value : String(JSON.stringify(value)), stack: '' };
    }
    const read = (key: string): string => {
      const handle = context.getProp(error, key);
      try {
        return context.typeof(handle) === 'string' ? context.getString(handle) : '';
      } finally {
        handle.dispose();
      }
    };
    const name = read('name');
    const message = read('message');
    if (name || message) return { name, message, stack: read('stack') };
    const value: unknown = context.dump(error);
    return { name: '', message: `thrown value ${JSON.stringify(value) ?? String(value)}`, stack: '' };
  } catch {
    return { name: '', message: 'an exception that could not be read', stack: '' };
  }
}

function locationOf(stack: string): string {
  const match = /main\.js:(\d+):(\d+)/.exec(stack);
  return match ? `${FILE_NAME}:${match[1]}:${match[2]}` : '';
}

function timeoutMessage(limits: Limits): string {
  return `JavaScript timed out: the script ran longer than the ${limits.timeoutMs} ms limit and was stopped.`;
}

/** console.log/info/warn/error/debug inside the sandbox; output is kept up to a bound. */
class ConsoleCapture {
  private readonly lines: string[] = [];
  private length = 0;
  private dropped = 0;
  private readonly maxChars: number;

  constructor(maxChars: number) {
    this.maxChars = maxChars;
  }

  get full(): boolean {
    return this.length >= this.maxChars;
  }

  add(line: string): void {
    if (this.length >= this.maxChars) {
      this.dropped += 1;
      return;
    }
    const kept = line.length + this.length > this.maxChars ? line.slice(0, this.maxChars - this.length) : line;
    if (kept.length < line.length) this.dropped += 1;
    this.lines.push(kept);
    this.length += kept.length + 1;
  }

  text(): string {
    const body = this.lines.join('\n');
    return this.dropped > 0 ? `${body}\n[console output truncated at ${this.maxChars} characters]` : body;
  }
}

function installConsole(context: QuickJSContext, capture: ConsoleCapture): void {
  const consoleObject = context.newObject();
  try {
    for (const level of ['log', 'info', 'debug', 'warn', 'error'] as const) {
      const fn = context.newFunction(level, (...args) => {
        if (capture.full) {
          capture.add('');
          return;
        }
        const text = args.map((arg) => formatArgument(context, arg)).join(' ');
        capture.add(level === 'warn' || level === 'error' ? `[${level}] ${text}` : text);
      });
      context.setProp(consoleObject, level, fn);
      fn.dispose();
    }
    context.setProp(context.global, 'console', consoleObject);
  } finally {
    consoleObject.dispose();
  }
}

function formatArgument(context: QuickJSContext, arg: QuickJSHandle): string {
  try {
    const kind = context.typeof(arg);
    if (kind === 'string') return context.getString(arg);
    if (kind === 'function') return '[function]';
    if (kind === 'bigint') return `${context.getBigInt(arg).toString()}n`;
    const value: unknown = context.dump(arg);
    if (
      value instanceof Error ||
      (typeof value === 'object' && value !== null && 'message' in value && 'name' in value)
    ) {
      const e = value as { name: unknown; message: unknown };
      return `${String(e.name)}: ${String(e.message)}`;
    }
    return typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    return '[unprintable value]';
  }
}

function safely(action: () => void): void {
  try {
    action();
  } catch {
    // Freeing after a QuickJS abort can throw; the module is discarded with this call anyway.
  }
}

// Last: the classes above are not hoisted.
const job = workerData as { code: string; limits: Limits };
parentPort!.postMessage(await run(job.code, job.limits));
