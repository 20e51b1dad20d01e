import { Inject, Injectable, Module, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, ConfigModule, type AppConfig } from '#libs/config';
import { createKafka } from '#libs/kafka';
import { addMetricsCollector } from '#libs/observability';
import { PersistenceModule } from '#libs/persistence';
import { ProjectionRunner, PROJECTIONS } from '#libs/read-models';

/** The projections: Kafka's mas.events.v1 and mas.usage.v1 into the read models, each event once. */
@Injectable()
export class ProjectorService implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly runner: ProjectionRunner;
  private stopCollecting: (() => void) | undefined;

  constructor(@Inject(APP_CONFIG) config: AppConfig, db: DataSource) {
    this.runner = new ProjectionRunner(db, createKafka(config, 'mas-projector'), PROJECTIONS, config.kafkaGroupPrefix);
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.runner.start();
    this.stopCollecting = addMetricsCollector(() => this.runner.readLag());
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopCollecting?.();
    await this.runner.stop();
  }
}

@Module({
  imports: [ConfigModule, PersistenceModule],
  providers: [ProjectorService],
})
export class ProjectorModule {}
