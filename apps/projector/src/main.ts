import 'reflect-metadata';
import { once } from 'node:events';
import { NestFactory } from '@nestjs/core';
import { configFromEnvironment } from '#libs/config';
import { createLogger, NestPinoLogger, startMetricsServer } from '#libs/observability';
import { ProjectorModule } from './projector.module.js';

const config = configFromEnvironment();
const logger = createLogger({ app: 'projector', format: config.logFormat, level: config.logLevel });
const app = await NestFactory.createApplicationContext(ProjectorModule, { logger: new NestPinoLogger(logger) });
await app.init();
const metrics = config.metrics.projectorPort
  ? await startMetricsServer(config.metrics.projectorPort, { host: config.metrics.host })
  : undefined;
logger.info({ context: 'projector', metrics_port: metrics?.port }, 'running projections; SIGINT or SIGTERM stops it');
await Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]);
await metrics?.close();
await app.close();
