export { dataSourceOptions, runMigrations } from './data-source.js';
export { PersistenceModule } from './persistence.module.js';
export { PostgresProbe } from './postgres.probe.js';
export { assertTestDatabase } from './test-database.js';
