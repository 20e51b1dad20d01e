import { DataSource, type DataSourceOptions } from 'typeorm';
import type { AppConfig } from '#libs/config';
import { ENTITIES } from './entities.js';
import { MIGRATIONS } from './migrations/index.js';
import { TypeOrmNestLogger } from './typeorm-logger.js';

/** TypeORM options for the service's database: explicit entity and migration lists (ESM, no globs). */
export function dataSourceOptions(config: Pick<AppConfig, 'databaseUrl'>): DataSourceOptions {
  return {
    type: 'postgres',
    url: config.databaseUrl,
    entities: [...ENTITIES],
    migrations: [...MIGRATIONS],
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: ['error', 'warn', 'migration'],
    logger: new TypeOrmNestLogger(['error', 'warn', 'migration']),
    extra: { max: 20, connectionTimeoutMillis: 5000 },
  };
}

/** Applies pending migrations; returns the names of those it ran. */
export async function runMigrations(config: Pick<AppConfig, 'databaseUrl'>): Promise<string[]> {
  const dataSource = new DataSource({ ...dataSourceOptions(config), logging: ['error'] });
  await dataSource.initialize();
  try {
    const ran = await dataSource.runMigrations({ transaction: 'each' });
    return ran.map((m) => m.name);
  } finally {
    await dataSource.destroy();
  }
}
