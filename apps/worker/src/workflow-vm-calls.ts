import { Script, type RunningScriptOptions } from 'node:vm';

/** The SDK's "no limit" for one activation's run time with the workflow code in the main thread
 * (`debugMode`): the largest timeout Node's `vm` accepts, about 50 days. */
export const SDK_NO_LIMIT_MS = 4294967295;

let installed = false;

/**
 * Calls into the workflows' V8 context without a watchdog thread when the SDK asks for no limit.
 *
 * Node's `vm` runs a script with a `timeout` by starting a watchdog thread for that one call (about
 * 130 us each, measured). The Temporal SDK calls into the workflow context several times per
 * activation, always with a timeout, and in `debugMode` that timeout is its "no limit" value: the
 * watchdog threads cost a fifth of the worker's main thread under load (docs/performance.md,
 * session 5). A call with that value runs without a timeout here, which is what the value means.
 * Any other timeout is left as it is.
 */
export function callWorkflowsWithoutWatchdog(): void {
  if (installed) return;
  installed = true;
  const runInContext = Script.prototype.runInContext;
  Script.prototype.runInContext = function (this: Script, context, options?: RunningScriptOptions) {
    if (options?.timeout !== SDK_NO_LIMIT_MS) return runInContext.call(this, context, options);
    const { timeout: _noLimit, ...rest } = options;
    return runInContext.call(this, context, rest);
  } as typeof runInContext;
}
