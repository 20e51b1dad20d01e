import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { dataSourceOptions } from './data-source.js';
import { PostgresProbe } from './postgres.probe.js';

/** The service's PostgreSQL connection pool (TypeORM), with its readiness probe. */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => dataSourceOptions(config),
    }),
  ],
  providers: [PostgresProbe],
  exports: [TypeOrmModule, PostgresProbe],
})
export class PersistenceModule {}
