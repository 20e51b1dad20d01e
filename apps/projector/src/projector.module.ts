import { Inject, Injectable, Logger, Module, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, ConfigModule, type AppConfig } from '#libs/config';
import { OutboxRelay } from '#libs/events';
import { createKafka } from '#libs/kafka';
import { BlobStore, FileStore, PersistenceModule } from '#libs/persistence';
import { StreamStore } from '#libs/streaming';
import { ProjectionRunner } from './projection-runner.js';
import { PROJECTIONS } from './projections/index.js';

/** How often expired blobs, generated files and stream events are deleted. */
const CLEANUP_MS = 10 * 60 * 1000;

/** The outbox relay (Postgres to Kafka), the projections (Kafka to read models), and the
 * retention of claim-check blobs, generated files and stream events. */
@Injectable()
export class ProjectorService implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly relay: OutboxRelay;
  readonly runner: ProjectionRunner;
  private readonly logger = new Logger('projector');
  private cleanup: NodeJS.Timeout | undefined;

  constructor(@Inject(APP_CONFIG) config: AppConfig, db: DataSource) {
    const kafka = createKafka(config, 'mas-projector');
    this.relay = new OutboxRelay(db, kafka, config.databaseUrl);
    this.runner = new ProjectionRunner(db, kafka, PROJECTIONS, config.kafkaGroupPrefix);
    const stores = [new BlobStore(db), new FileStore(db), new StreamStore(db)];
    this.expire = async () => {
      const counts = await Promise.all(stores.map((s) => s.deleteExpired()));
      if (counts.some((n) => n > 0)) this.logger.log(`retention: deleted ${counts.join('/')} expired blobs/files/stream events`);
    };
  }

  /** Deletes what has passed its retention. */
  readonly expire: () => Promise<void>;

  async onApplicationBootstrap(): Promise<void> {
    await this.relay.start();
    await this.runner.start();
    this.cleanup = setInterval(() => void this.expire().catch((e: unknown) => this.logger.warn(`retention: ${String(e)}`)), CLEANUP_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.cleanup);
    await this.runner.stop();
    await this.relay.stop();
  }
}

@Module({
  imports: [ConfigModule, PersistenceModule],
  providers: [ProjectorService],
})
export class ProjectorModule {}
