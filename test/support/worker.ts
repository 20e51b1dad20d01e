import { NestFactory } from '@nestjs/core';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { WorkerModule } from '../../apps/worker/src/worker.module.js';
import { createAgentWorker } from '../../apps/worker/src/worker.js';
import { withEnv } from './env.js';

/** A running agent worker, in this process, built exactly as apps/worker/src/main.ts builds it. */
export interface RunningWorker {
  close(): Promise<void>;
}

let runtimeInstalled = false;

/** Temporal's runtime logs at WARN in tests (installed once per process). */
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // Already installed by an earlier test file in this process.
  }
}

/** The worker of a test's own task queue; it creates no reconciler schedule unless `env` asks for
 * one (a schedule would outlive the test's task queue). `options` as createAgentWorker takes them. */
export async function startWorker(env: Record<string, string | undefined> = {}, options: Parameters<typeof createAgentWorker>[1] = {}): Promise<RunningWorker> {
  quietRuntime();
  const { app, worker, connection } = await withEnv({ RECONCILER_INTERVAL_SECONDS: '0', ...env }, async () => {
    const context = await NestFactory.createApplicationContext(WorkerModule, { logger: ['warn', 'error', 'fatal'] });
    return { app: context, ...(await createAgentWorker(context, options)) };
  });
  const running = worker.run();
  return {
    close: async () => {
      worker.shutdown();
      await running;
      await connection.close();
      await app.close();
    },
  };
}
