import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const STACK = resolve(import.meta.dirname, '../../scripts/stack.sh');
const run = promisify(execFile);

export type StackComponent = 'postgres' | 'kafka' | 'temporal';

/** `scripts/stack.sh stop|start|restart <component>` on the shared local stack. */
export async function stack(command: 'stop' | 'start' | 'restart', component: StackComponent): Promise<void> {
  await run('bash', [STACK, command, component], { timeout: 180_000 });
}

/** Runs `during` with the component stopped, and always starts it again (other tests share the
 * stack: the outage lasts as long as `during` and no longer). */
export async function withComponentStopped<T>(component: StackComponent, during: () => Promise<T>): Promise<T> {
  await stack('stop', component);
  try {
    return await during();
  } finally {
    await stack('start', component);
  }
}
