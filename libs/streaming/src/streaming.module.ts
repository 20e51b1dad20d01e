import { Inject, Injectable, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { createKafka } from '#libs/kafka';
import { PersistenceModule, PgListener } from '#libs/persistence';
import { KafkaLiveChannel } from './live-channel.js';
import { StreamHub } from './stream-hub.js';
import { StreamSignals } from './stream-signals.js';
import { StreamPublisher } from './stream-publisher.js';
import { StreamStore } from './stream-store.js';

/** The worker's publisher, with the lifetime of its Kafka producer. */
@Injectable()
export class StreamPublisherService implements OnApplicationShutdown {
  readonly publisher: StreamPublisher;
  private readonly live: KafkaLiveChannel;

  constructor(@Inject(APP_CONFIG) config: AppConfig, db: DataSource) {
    // One quick attempt: a late live event is worth less than a run that waits for it.
    this.live = new KafkaLiveChannel(
      createKafka(config, 'mas-worker-stream').producer({ allowAutoTopicCreation: false, retry: { retries: 0 } }),
    );
    this.publisher = new StreamPublisher(new StreamStore(db, config.streamRetentionSeconds), this.live);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.live.close();
  }
}

/** How long a new stream waits for the hub to join before it starts from the store alone. */
const HUB_START_WAIT_MS = 3000;

/** The api's hub and listener, with the lifetime of its consumer and its connection. */
@Injectable()
export class StreamHubService implements OnApplicationShutdown {
  readonly hub: StreamHub;
  readonly store: StreamStore;
  /** Every stream of this process waits on the process's one listener (issue 28). */
  readonly signals: StreamSignals;

  constructor(@Inject(APP_CONFIG) config: AppConfig, db: DataSource, listener: PgListener) {
    this.hub = new StreamHub(createKafka(config, 'mas-api-stream'));
    this.store = new StreamStore(db, config.streamRetentionSeconds);
    this.signals = new StreamSignals(listener);
  }

  /** Listens on mas_stream and joins mas.stream.v1 on the first stream (an api that never streams
   * holds neither), waiting at most a few seconds: without Kafka the stream is served from the
   * store, woken by the listener (without the listener too, its sessions poll it), the join goes
   * on in the background, and a failed one is tried again by the next stream. */
  async ensureStarted(): Promise<void> {
    const listening = this.signals.start().catch((e: unknown) => {
      new Logger('stream-signals').warn(
        `not listening on mas_stream yet (streams poll the store): ${e instanceof Error ? e.message : String(e)}`,
      );
    });
    const started = this.hub.start().then(
      () => true,
      (e: unknown) => {
        new Logger('stream-hub').warn(`not consuming mas.stream.v1 yet: ${e instanceof Error ? e.message : String(e)}`);
        return false;
      },
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([started, listening]),
      new Promise((resolve) => (timer = setTimeout(resolve, HUB_START_WAIT_MS))),
    ]);
    clearTimeout(timer);
  }

  async onApplicationShutdown(): Promise<void> {
    this.signals.stop();
    await this.hub.stop();
  }
}

@Module({ imports: [PersistenceModule], providers: [StreamPublisherService], exports: [StreamPublisherService] })
export class StreamPublisherModule {}

@Module({ imports: [PersistenceModule], providers: [StreamHubService], exports: [StreamHubService] })
export class StreamHubModule {}
