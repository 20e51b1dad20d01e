import { loadConfig, type AppConfig } from '#libs/config';
import { assertTestDatabase } from './test-database.js';

/** The configuration that `npm test` exported, refused unless it names a test database. */
export function testConfig(): AppConfig {
  const config = loadConfig(process.env);
  assertTestDatabase(config.databaseUrl);
  return config;
}
