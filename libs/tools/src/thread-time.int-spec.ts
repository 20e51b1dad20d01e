import { Worker } from 'node:worker_threads';
import { watchThreadTime, type ThreadOverrun } from './thread-time.js';

// Worker threads, no I/O; an int-spec because it starts real threads and waits on them.
const SLEEP_THEN_ANSWER = `
  const { parentPort } = require('node:worker_threads');
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);
  parentPort.postMessage('answered');
`;
const SPIN = 'for (;;) {}';
const SLEEP_FOR_EVER = 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);';

/** Runs `code` in a thread watched with `limits`: what came first, its answer or an overrun. */
async function watched(code: string, limits: { cpuMs: number; wallMs: number }): Promise<ThreadOverrun | 'answered'> {
  const worker = new Worker(code, { eval: true });
  let unwatch: (() => void) | undefined;
  try {
    return await new Promise<ThreadOverrun | 'answered'>((resolve, reject) => {
      unwatch = watchThreadTime(worker, limits, resolve);
      worker.once('message', () => resolve('answered'));
      worker.once('error', reject);
    });
  } finally {
    unwatch?.();
    await worker.terminate();
  }
}

describe('watchThreadTime', () => {
  it('counts the CPU time a thread used, not the time it waited', async () => {
    // 1.5 s on the wall clock, a few ms of CPU: a wall-clock limit of 300 ms would have stopped it.
    await expect(watched(SLEEP_THEN_ANSWER, { cpuMs: 300, wallMs: 60_000 })).resolves.toBe('answered');
  });

  it('stops a thread that computes past its CPU limit', async () => {
    await expect(watched(SPIN, { cpuMs: 300, wallMs: 60_000 })).resolves.toBe('cpu');
  });

  it('stops a thread that neither answers nor computes at the wall-clock last resort', async () => {
    await expect(watched(SLEEP_FOR_EVER, { cpuMs: 300, wallMs: 1000 })).resolves.toBe('wall');
  });

  it('calls back once, and not after the watch ended', async () => {
    const worker = new Worker(SPIN, { eval: true });
    const calls: ThreadOverrun[] = [];
    const unwatch = watchThreadTime(worker, { cpuMs: 100, wallMs: 60_000 }, (why) => calls.push(why));
    const ended = new Worker(SPIN, { eval: true });
    const endedCalls: ThreadOverrun[] = [];
    watchThreadTime(ended, { cpuMs: 100, wallMs: 60_000 }, (why) => endedCalls.push(why))();
    try {
      while (calls.length === 0) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 500));
      expect(calls).toEqual(['cpu']);
      expect(endedCalls).toEqual([]);
    } finally {
      unwatch();
      await Promise.all([worker.terminate(), ended.terminate()]);
    }
  });
});
