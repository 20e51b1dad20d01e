import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { WorkerModule } from '../../apps/worker/src/worker.module.js';
import { becomeCurrentIfDue, createAgentWorker } from '../../apps/worker/src/worker.js';
import { slowStartReport, TEST_APP_ENV, withEnv } from './env.js';

/** A running agent worker, in this process, built exactly as apps/worker/src/main.ts builds it. */
export interface RunningWorker {
  /** The worker's providers (tests read the state of its caches). */
  readonly app: INestApplicationContext;
  close(): Promise<void>;
}

/** The budget of a set-up hook that starts a worker and an api in the Jest process. A start takes
 * 2-5 s on a quiet machine; in CI, on 2 cores shared with PostgreSQL, Kafka and Temporal, one took
 * over 30 s (Jest's default), once; a start slower than 10 s says where its time went
 * (slowStartReport). */
export const APP_START_TIMEOUT_MS = 60_000;

/** The budget of a tear-down hook that closes a worker. Longer than Jest's 30 s default: a worker's
 * webhook dispatcher (a Kafka consumer in the tests' shared group) that is still joining its group
 * disconnects only once the join ends, and a join waits up to the 30 s session timeout for a member
 * that went away without leaving (a worker a test killed with SIGKILL, as retried-task.e2e does; a
 * broker restart, as in streaming-outage.e2e). Measured: 31 s from a new member's start to its
 * disconnect with a killed member in its group. A hook cut short leaves that worker running in the
 * Jest process, its pollers still working on the test database while later files run, and fails
 * its file although every test passed (CI, outages.e2e, once). */
export const APP_CLOSE_TIMEOUT_MS = 120_000;

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

/**
 * The worker of a test's own task queue; it creates no reconciler schedule unless `env` asks for
 * one (a schedule would outlive the test's task queue). Unversioned unless `env` sets
 * TEMPORAL_WORKER_VERSIONING: each test file's task queue would be a worker deployment of its own
 * on the shared server, which keeps a deployment until it is deleted and refuses a namespace's
 * 101st (matching.maxDeployments); a versioned worker returns once its build is current if it is
 * to be (TEMPORAL_DEPLOYMENT_PROMOTE). `options` as createAgentWorker takes them.
 */
export async function startWorker(
  env: Record<string, string | undefined> = {},
  options: Parameters<typeof createAgentWorker>[1] = {},
): Promise<RunningWorker> {
  quietRuntime();
  const phases = slowStartReport('worker');
  const { app, worker, connection, build } = await withEnv(
    { ...TEST_APP_ENV, RECONCILER_INTERVAL_SECONDS: '0', TEMPORAL_WORKER_VERSIONING: 'false', ...env },
    async () => {
      const context = await NestFactory.createApplicationContext(WorkerModule.forRole('workflows'), {
        logger: ['warn', 'error', 'fatal'],
      });
      phases.done('providers');
      return { app: context, ...(await createAgentWorker(context, options)) };
    },
  );
  phases.done('Temporal worker created');
  const running = worker.run();
  if (build) await Promise.race([becomeCurrentIfDue(app, build), running]);
  phases.end();
  return {
    app,
    close: async () => {
      worker.shutdown();
      await running;
      await connection.close();
      await app.close();
    },
  };
}
