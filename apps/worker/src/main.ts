import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Runtime } from '@temporalio/worker';
import { configFromEnvironment } from '#libs/config';
import {
  createLogger,
  NestPinoLogger,
  scrape,
  startMetricsServer,
  startTracing,
  temporalLogger,
} from '#libs/observability';
import { WorkerModule } from './worker.module.js';
import { becomeCurrentIfDue, createAgentWorker, createLongActivityWorker } from './worker.js';

const config = configFromEnvironment();
startTracing('mas-worker');
const logger = createLogger({ app: 'worker', format: config.logFormat, level: config.logLevel });
const sdkPort = config.metrics.temporalSdkPort;
// Temporal's runtime (once per process, before any connection): its logs through pino, and its
// own metrics (task slots, poll and schedule-to-start latencies, sticky cache) on a loopback
// Prometheus endpoint that the worker's /metrics merges into its own.
Runtime.install({
  logger: temporalLogger(logger),
  ...(sdkPort
    ? {
        telemetryOptions: {
          metrics: {
            prometheus: {
              bindAddress: `127.0.0.1:${sdkPort}`,
              countersTotalSuffix: true,
              unitSuffix: true,
              useSecondsForDurations: true,
            },
          },
        },
      }
    : {}),
});
const app = await NestFactory.createApplicationContext(WorkerModule.forRole(config.temporal.workerRole), {
  logger: new NestPinoLogger(logger),
});
const metrics = config.metrics.workerPort
  ? await startMetricsServer(config.metrics.workerPort, {
      host: config.metrics.host,
      extra: sdkPort ? scrape(`http://127.0.0.1:${sdkPort}/metrics`) : undefined,
    })
  : undefined;
const { worker, connection, build } =
  config.temporal.workerRole === 'long-activities'
    ? { ...(await createLongActivityWorker(app)), build: undefined }
    : await createAgentWorker(app);
// Temporal's runtime shuts the worker down on SIGINT/SIGTERM; run() resolves once it has drained.
const running = worker.run();
try {
  if (config.temporal.workerRole === 'long-activities')
    logger.info(
      { context: 'worker', metrics_port: metrics?.port },
      `polling task queue ${worker.options.taskQueue} (long activities only: streamed model calls, built-in tools; no background loops)`,
    );
  else if (build) {
    // The build registers with its first poll; "polling" is logged once it is known whether it
    // takes new runs (current) or only those pinned to it (an operator promotes it).
    const { current, promoted } = await Promise.race([
      becomeCurrentIfDue(app, build),
      running.then(() => ({ current: undefined, promoted: false })),
    ]);
    const role =
      current === build.buildId
        ? promoted
          ? 'made current'
          : 'current'
        : `not current (current: ${current ?? 'none'}; \`mas deploy promote ${build.buildId}\` makes it so)`;
    logger.info(
      { context: 'worker', metrics_port: metrics?.port, build_id: build.buildId, deployment: build.deploymentName },
      `polling task queue ${worker.options.taskQueue} as build ${build.buildId}, ${role}`,
    );
  } else
    logger.info(
      { context: 'worker', metrics_port: metrics?.port },
      `polling task queue ${worker.options.taskQueue} (unversioned)`,
    );
  await running;
} catch (e) {
  // Said before anything else: the connection cannot close while the worker still holds it, and
  // that error would otherwise be the only one in the log (the drill's deploy phase, session 17).
  logger.error({ context: 'worker', err: e }, `the worker stops: ${e instanceof Error ? e.message : String(e)}`);
  if (worker.getState() === 'RUNNING') worker.shutdown();
  await running.catch(() => undefined);
  throw e;
} finally {
  await connection.close();
  await metrics?.close();
  await app.close();
}
