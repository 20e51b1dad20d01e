import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { BlobStore } from './blob-store.js';
import { FileStore } from './file-store.js';
import { dataSourceOptions } from './data-source.js';
import { PostgresProbe } from './postgres.probe.js';
import { SessionEndRequests } from './session-end-requests.js';

/** The service's PostgreSQL connection pool (TypeORM), with its readiness probe. */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => dataSourceOptions(config),
    }),
  ],
  providers: [
    PostgresProbe,
    { provide: BlobStore, inject: [DataSource], useFactory: (db: DataSource) => new BlobStore(db) },
    { provide: FileStore, inject: [DataSource], useFactory: (db: DataSource) => new FileStore(db) },
    { provide: SessionEndRequests, inject: [DataSource], useFactory: (db: DataSource) => new SessionEndRequests(db) },
  ],
  exports: [TypeOrmModule, PostgresProbe, BlobStore, FileStore, SessionEndRequests],
})
export class PersistenceModule {}
