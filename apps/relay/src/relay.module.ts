import {
  Inject,
  Injectable,
  Logger,
  Module,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, ConfigModule, type AppConfig } from '#libs/config';
import { oldestUnsentAgeSeconds, OUTBOX_LAG_LIMIT_S, OutboxRelay } from '#libs/events';
import { createKafka } from '#libs/kafka';
import { addMetricsCollector, outboxGauges } from '#libs/observability';
import { PersistenceModule, PgListener } from '#libs/persistence';
import { pruneAll } from './retention.js';

/** How often the retention rules run. */
const RETENTION_MS = 10 * 60 * 1000;

/** The outbox relay: PostgreSQL's outbox to Kafka (mas.events.v1, mas.usage.v1), one try per batch
 * and the batch sent again on failure (libs/events OutboxRelay); several relays may run, one
 * publishing at a time (an advisory lock), so a stream's events keep their order. */
@Injectable()
export class RelayService implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly relay: OutboxRelay;
  private readonly logger = new Logger('relay');
  private watch: NodeJS.Timeout | undefined;
  private stopCollecting: (() => void) | undefined;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly db: DataSource,
    listener: PgListener,
  ) {
    this.relay = new OutboxRelay(db, createKafka(config, 'mas-relay'), listener);
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.relay.start();
    this.stopCollecting = addMetricsCollector(() => this.readOutbox());
    // Its own health, in its log (the api's /readyz shows the same as the `outbox` component).
    this.watch = setInterval(() => {
      oldestUnsentAgeSeconds(this.db).then(
        (age) =>
          age > OUTBOX_LAG_LIMIT_S && this.logger.warn(`the oldest unsent outbox row is ${Math.round(age)} s old`),
        (e: unknown) => this.logger.warn(`cannot read the outbox: ${e instanceof Error ? e.message : String(e)}`),
      );
    }, 30_000);
  }

  /** The outbox gauges, read from PostgreSQL at each scrape (every relay reports the same table). */
  private async readOutbox(): Promise<void> {
    const [row]: { pending: number; age: number }[] = await this.db.query(
      `select count(*)::int as pending, coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as age from outbox where published_at is null`,
    );
    const gauges = outboxGauges();
    gauges.pendingRows.set(row?.pending ?? 0);
    gauges.oldestPendingAge.set(row?.age ?? 0);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopCollecting?.();
    clearInterval(this.watch);
    await this.relay.stop();
  }
}

/** Deletes what has passed its retention in every table that grows with traffic (retention.ts). */
@Injectable()
export class RetentionService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('retention');
  private timer: NodeJS.Timeout | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: DataSource,
  ) {}

  async prune(): Promise<void> {
    for (const r of await pruneAll(this.db, this.config)) {
      if (r.error) this.logger.warn(`${r.table}: ${r.error}`);
      else if (r.deleted > 0) this.logger.log(`${r.table}: deleted ${r.deleted} rows past their retention`);
    }
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.prune(), RETENTION_MS);
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}

@Module({ imports: [ConfigModule, PersistenceModule], providers: [RelayService, RetentionService] })
export class RelayModule {}
