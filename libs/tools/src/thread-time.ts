import type { Worker } from 'node:worker_threads';

/** How often a watched thread's CPU time is read, in ms. */
const CHECK_EVERY_MS = 100;

/** The wall-clock last resort of a worker thread (see watchThreadTime): far above any CPU limit,
 * below the minute a built-in tool's activity may take (runBuiltinTool in workflows/src/proxies.ts),
 * so that the call ends with the tool's own error, not a timed-out and retried activity. */
export const THREAD_WALL_LIMIT_MS = 50_000;

/** Node >= 24 (package.json's engines) has `worker.cpuUsage()`; the installed @types/node does not. */
type MeteredWorker = Worker & { cpuUsage(): Promise<NodeJS.CpuUsage> };

/** Why a watched thread was stopped: it computed past its CPU limit, or it neither answered nor
 * computed within the wall-clock last resort. */
export type ThreadOverrun = 'cpu' | 'wall';

/**
 * Watches a worker thread's time (PDF reading, run_javascript): calls `onOverrun` once the thread
 * has used more than `cpuMs` of CPU time, or `wallMs` have passed, whichever comes first; the
 * returned function ends the watch.
 *
 * The limit is the thread's CPU time, not the wall clock: on a machine whose cores are busy with
 * other work (or a VM its host paused), a thread that is waiting for a core is not running over
 * its limit. A wall-clock limit failed a `2+2` run_javascript call as "timed out" when its thread
 * could not even start within it on a starved machine (a CI run). The wall-clock bound stays, far
 * above the CPU limit, only so that a thread that never answers cannot hold its slot for ever.
 */
export function watchThreadTime(
  worker: Worker,
  limits: { readonly cpuMs: number; readonly wallMs: number },
  onOverrun: (why: ThreadOverrun) => void,
): () => void {
  let watching = true;
  const end = (): void => {
    watching = false;
    clearInterval(poll);
    clearTimeout(wall);
  };
  const overrun = (why: ThreadOverrun): void => {
    if (!watching) return;
    end();
    onOverrun(why);
  };
  const poll = setInterval(() => {
    (worker as MeteredWorker).cpuUsage().then(
      (used) => {
        if ((used.user + used.system) / 1000 > limits.cpuMs) overrun('cpu');
      },
      // The thread has exited: its own 'exit' event settles the call.
      () => undefined,
    );
  }, CHECK_EVERY_MS);
  const wall = setTimeout(() => overrun('wall'), limits.wallMs);
  return end;
}
