import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Runtime } from '@temporalio/worker';
import { configFromEnvironment } from '#libs/config';
import { createLogger, NestPinoLogger, scrape, startMetricsServer, startTracing, temporalLogger } from '#libs/observability';
import { WorkerModule } from './worker.module.js';
import { createAgentWorker } from './worker.js';

const config = configFromEnvironment();
startTracing('mas-worker');
const logger = createLogger({ app: 'worker', format: config.logFormat, level: config.logLevel });
const sdkPort = config.metrics.temporalSdkPort;
// Temporal's runtime (once per process, before any connection): its logs through pino, and its
// own metrics (task slots, poll and schedule-to-start latencies, sticky cache) on a loopback
// Prometheus endpoint that the worker's /metrics merges into its own.
Runtime.install({
  logger: temporalLogger(logger),
  ...(sdkPort ? { telemetryOptions: { metrics: { prometheus: { bindAddress: `127.0.0.1:${sdkPort}`, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true } } } } : {}),
});
const app = await NestFactory.createApplicationContext(WorkerModule, { logger: new NestPinoLogger(logger) });
const metrics = config.metrics.workerPort ? await startMetricsServer(config.metrics.workerPort, sdkPort ? scrape(`http://127.0.0.1:${sdkPort}/metrics`) : undefined) : undefined;
const { worker, connection } = await createAgentWorker(app);
logger.info({ context: 'worker', metrics_port: metrics?.port }, `polling task queue ${worker.options.taskQueue}`);
// Temporal's runtime shuts the worker down on SIGINT/SIGTERM; run() resolves once it has drained.
try {
  await worker.run();
} finally {
  await connection.close();
  await metrics?.close();
  await app.close();
}
