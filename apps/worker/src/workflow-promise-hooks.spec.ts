import { promiseHooks } from 'node:v8';
import { createContext, runInContext } from 'node:vm';
import { withWorkflowPromiseHooks } from './workflow-promise-hooks.js';

/** What a hook created while the worker is created (as the Temporal SDK does) sees of one promise
 * made here and one made in another V8 context (where the workflows run). */
async function seenBy(stackTraces: boolean): Promise<{ own: boolean; workflow: boolean }> {
  const seen = new Set<Promise<unknown>>();
  const stop = await withWorkflowPromiseHooks(stackTraces, () =>
    Promise.resolve(promiseHooks.createHook({ init: (promise) => seen.add(promise) })),
  );
  const workflowContext = createContext({});
  try {
    const own = Promise.resolve(1);
    const workflow = runInContext('Promise.resolve(1)', workflowContext) as Promise<unknown>;
    return { own: seen.has(own), workflow: seen.has(workflow) };
  } finally {
    stop();
  }
}

describe('withWorkflowPromiseHooks', () => {
  it('installs no promise hook when stack traces are off', async () => {
    expect(await seenBy(false)).toEqual({ own: false, workflow: false });
  });

  it('hands the hook only the promises of the workflows context when stack traces are on', async () => {
    expect(await seenBy(true)).toEqual({ own: false, workflow: true });
  });

  it('puts createHook back once the worker is created, also when creating it fails', async () => {
    const createHook = promiseHooks.createHook;
    await expect(withWorkflowPromiseHooks(false, () => Promise.reject(new Error('no server')))).rejects.toThrow(
      'no server',
    );
    expect(promiseHooks.createHook).toBe(createHook);
  });
});
