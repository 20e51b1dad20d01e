import { Inject, Injectable } from '@nestjs/common';
import { Kafka, logLevel } from 'kafkajs';
import { APP_CONFIG, kafkaConnectionOptions, type AppConfig } from '#libs/config';
import type { ReadinessProbe } from '#libs/health';

/** Answers when a broker describes the cluster. A short-lived admin client with no retries, so a
 * dead broker fails fast instead of backing off. */
@Injectable()
export class KafkaProbe implements ReadinessProbe {
  readonly name = 'kafka';
  private readonly kafka: Kafka;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.kafka = new Kafka({
      clientId: 'mas-readiness',
      brokers: [...config.kafkaBrokers],
      ...kafkaConnectionOptions(config.engines.kafka),
      connectionTimeout: 1500,
      requestTimeout: 1500,
      retry: { retries: 0 },
      logLevel: logLevel.NOTHING,
    });
  }

  async check(): Promise<void> {
    const admin = this.kafka.admin({ retry: { retries: 0 } });
    await admin.connect();
    try {
      const cluster = await admin.describeCluster();
      if (cluster.brokers.length === 0) throw new Error('no brokers in the cluster');
    } finally {
      await admin.disconnect();
    }
  }
}
