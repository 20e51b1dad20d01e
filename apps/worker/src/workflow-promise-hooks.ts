import { promiseHooks } from 'node:v8';

type PromiseHooks = Parameters<typeof promiseHooks.createHook>[0];
type Hook = (promise: Promise<unknown>, ...rest: never[]) => void;

/**
 * Runs `create` (the worker's creation) with the Temporal SDK's promise hooks narrowed to what
 * `stackTraces` asks for.
 *
 * The SDK records where every promise of the workflow code was made (a captured and source-mapped
 * stack per promise), for the stack trace query the Temporal UI shows for a running workflow, with
 * a process-wide `v8.promiseHooks` hook. In a worker thread that process is the workflow thread
 * alone; with the workflow code in the worker's main thread (`debugMode`, see worker.ts) the hook
 * also ran for every promise of the database driver, Kafka and HTTP, and compiled a function for
 * each to learn that it was not a workflow's. Measured (docs/performance.md): the hook for other
 * promises cost 8% of the worker's main thread under load, the stacks of the workflows' own
 * promises 16%. So the hook is not installed unless `stackTraces` (WORKFLOW_STACK_TRACES) asks for
 * it, and then it sees only the workflows' promises: they belong to the workflows' own V8 context,
 * whose `Promise` is not this one.
 */
export async function withWorkflowPromiseHooks<T>(stackTraces: boolean, create: () => Promise<T>): Promise<T> {
  const createHook = promiseHooks.createHook;
  const ownPromise = Promise;
  const workflowsOnly = (hook: Hook | undefined): Hook | undefined =>
    hook && ((promise, ...rest) => (promise.constructor === ownPromise ? undefined : hook(promise, ...rest)));
  promiseHooks.createHook = (hooks: PromiseHooks) => {
    if (!stackTraces) return () => undefined;
    return createHook.call(promiseHooks, {
      init: workflowsOnly(hooks.init),
      settled: workflowsOnly(hooks.settled),
      before: workflowsOnly(hooks.before),
      after: workflowsOnly(hooks.after),
    } as PromiseHooks);
  };
  try {
    return await create();
  } finally {
    promiseHooks.createHook = createHook;
  }
}
