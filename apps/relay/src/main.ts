import 'reflect-metadata';
import { once } from 'node:events';
import { NestFactory } from '@nestjs/core';
import { configFromEnvironment } from '#libs/config';
import { createLogger, NestPinoLogger, startMetricsServer } from '#libs/observability';
import { RelayModule } from './relay.module.js';

const config = configFromEnvironment();
const logger = createLogger({ app: 'relay', format: config.logFormat, level: config.logLevel });
const app = await NestFactory.createApplicationContext(RelayModule, { logger: new NestPinoLogger(logger) });
await app.init();
const metrics = config.metrics.relayPort
  ? await startMetricsServer(config.metrics.relayPort, { host: config.metrics.host })
  : undefined;
logger.info(
  { context: 'relay', metrics_port: metrics?.port },
  'relaying the outbox to Kafka and pruning what has passed its retention; SIGINT or SIGTERM stops it',
);
await Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]);
await metrics?.close();
await app.close();
