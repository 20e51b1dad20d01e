import { Inject, Injectable, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { Producer } from 'kafkajs';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { createKafka } from '#libs/kafka';
import { PersistenceModule } from '#libs/persistence';
import { StreamHub } from './stream-hub.js';
import { StreamPublisher } from './stream-publisher.js';
import { StreamStore } from './stream-store.js';

/** The worker's publisher, with the lifetime of its Kafka producer. */
@Injectable()
export class StreamPublisherService implements OnApplicationShutdown {
  readonly producer: Producer;
  readonly publisher: StreamPublisher;
  private connected: Promise<void> | undefined;

  constructor(@Inject(APP_CONFIG) config: AppConfig, db: DataSource) {
    this.producer = createKafka(config, 'mas-worker-stream').producer({ allowAutoTopicCreation: false });
    this.publisher = new StreamPublisher(new StreamStore(db), {
      send: async (record) => {
        this.connected ??= this.producer.connect();
        await this.connected;
        return this.producer.send(record);
      },
    });
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.connected) await this.producer.disconnect();
  }
}

/** The api's hub, with the lifetime of its consumer. */
@Injectable()
export class StreamHubService implements OnApplicationShutdown {
  readonly hub: StreamHub;
  readonly store: StreamStore;

  constructor(@Inject(APP_CONFIG) config: AppConfig, db: DataSource) {
    this.hub = new StreamHub(createKafka(config, 'mas-api-stream'));
    this.store = new StreamStore(db);
  }

  /** Joins mas.stream.v1 on the first stream (an api that never streams holds no consumer);
   * without Kafka the stream is served from the store and the next one tries again. */
  async ensureStarted(): Promise<void> {
    await this.hub.start().catch((e: unknown) => new Logger('stream-hub').warn(`not consuming mas.stream.v1 yet: ${e instanceof Error ? e.message : String(e)}`));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.hub.stop();
  }
}

@Module({ imports: [PersistenceModule], providers: [StreamPublisherService], exports: [StreamPublisherService] })
export class StreamPublisherModule {}

@Module({ imports: [PersistenceModule], providers: [StreamHubService], exports: [StreamHubService] })
export class StreamHubModule {}
