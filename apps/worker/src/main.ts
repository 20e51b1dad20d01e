import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { startTracing } from '#libs/observability';
import { WorkerModule } from './worker.module.js';
import { createAgentWorker } from './worker.js';

const logger = new Logger('worker');
startTracing('mas-worker');
const app = await NestFactory.createApplicationContext(WorkerModule);
const { worker, connection } = await createAgentWorker(app);
logger.log(`polling task queue ${worker.options.taskQueue}`);
// Temporal's runtime shuts the worker down on SIGINT/SIGTERM; run() resolves once it has drained.
try {
  await worker.run();
} finally {
  await connection.close();
  await app.close();
}
