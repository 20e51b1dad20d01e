import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { BlobStore } from './blob-store.js';
import { FileStore } from './file-store.js';
import { dataSourceOptions } from './data-source.js';
import { PgListener } from './pg-listener.js';
import { PostgresProbe } from './postgres.probe.js';
import { SessionEndRequests } from './session-end-requests.js';

/** The process's one LISTEN connection, closed with the app. */
@Injectable()
class PgListenerService extends PgListener implements OnApplicationShutdown {
  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    super(config.databaseUrl);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.stop();
  }
}

/** The service's PostgreSQL connection pool (TypeORM), with its readiness probe, and the
 * process's listener (connected only once something subscribes). */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => dataSourceOptions(config),
    }),
  ],
  providers: [
    PostgresProbe,
    { provide: PgListener, useClass: PgListenerService },
    { provide: BlobStore, inject: [DataSource], useFactory: (db: DataSource) => new BlobStore(db) },
    { provide: FileStore, inject: [DataSource], useFactory: (db: DataSource) => new FileStore(db) },
    { provide: SessionEndRequests, inject: [DataSource], useFactory: (db: DataSource) => new SessionEndRequests(db) },
  ],
  exports: [TypeOrmModule, PostgresProbe, BlobStore, FileStore, PgListener, SessionEndRequests],
})
export class PersistenceModule {}
