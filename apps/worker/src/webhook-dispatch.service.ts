import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { EventStore, RequestStream } from '#libs/events';
import { createKafka } from '#libs/kafka';
import { FileStore } from '#libs/persistence';
import { TemporalClientService } from '#libs/temporal';
import { WebhookDispatcher, WebhookStore } from '#libs/webhooks';
import { WebhookResourceRenderer } from './webhook-resources.js';

/**
 * The webhook dispatcher of this worker: a consumer group (`<KAFKA_GROUP_PREFIX>-webhooks`) on
 * mas.events.v1 that starts a delivery workflow on this worker's task queue for each subscribed
 * event. It lives in the worker because all it does is start workflows; the projector stays
 * free of Temporal. Kafka being down does not hold the worker's start-up.
 */
@Injectable()
export class WebhookDispatchService implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly dispatcher: WebhookDispatcher;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    db: DataSource,
    events: EventStore,
    requests: RequestStream,
    files: FileStore,
    temporal: TemporalClientService,
    store: WebhookStore,
  ) {
    if (!temporal.client) throw new Error('the webhook dispatcher needs TEMPORAL_ADDRESS');
    this.dispatcher = new WebhookDispatcher(
      createKafka(config, 'mas-webhooks'),
      temporal.client,
      store,
      new WebhookResourceRenderer(db, events, requests, files, config),
      {
        groupId: `${config.kafkaGroupPrefix}-webhooks`,
        taskQueue: config.temporal.taskQueue,
        retry: {
          initialIntervalMs: config.webhooks.retryInitialIntervalMs,
          maximumIntervalMs: config.webhooks.retryMaximumIntervalMs,
          retryForMs: config.webhooks.retryForMs,
          attemptTimeoutMs: config.webhooks.requestTimeoutMs,
        },
      },
    );
  }

  onApplicationBootstrap(): void {
    this.dispatcher.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.dispatcher.stop();
  }
}
