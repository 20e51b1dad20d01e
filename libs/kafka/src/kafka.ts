import './request-queue-timeout.js';
import { Kafka, logLevel, type LogEntry } from 'kafkajs';
import { Logger } from '@nestjs/common';
import { kafkaConnectionOptions, type AppConfig } from '#libs/config';

const LEVELS: Record<number, 'error' | 'warn' | 'log' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'log',
  [logLevel.DEBUG]: 'debug',
};

/** A kafkajs client for one app, logging through Nest's Logger; SSL and SASL as configured
 * (KAFKA_SSL*, KAFKA_SASL_*: docs/deploy.md). */
export function createKafka(
  config: Pick<AppConfig, 'kafkaBrokers'> & Partial<Pick<AppConfig, 'engines'>>,
  clientId: string,
): Kafka {
  const logger = new Logger(`kafka:${clientId}`);
  return new Kafka({
    clientId,
    brokers: [...config.kafkaBrokers],
    ...kafkaConnectionOptions(config.engines?.kafka),
    connectionTimeout: 3000,
    // Short, bounded retries: callers (the outbox relay, consumers) have their own retry loops.
    retry: { retries: 3, initialRetryTime: 200, maxRetryTime: 1000 },
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log }: LogEntry) => {
        const { message, ...rest } = log;
        logger[LEVELS[level] ?? 'log'](`${message} ${JSON.stringify(rest)}`);
      },
  });
}
