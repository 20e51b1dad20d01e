import { Global, Module } from '@nestjs/common';
import { loadConfig, type AppConfig } from './config.js';

/** Injection token of the validated AppConfig. */
export const APP_CONFIG = Symbol('APP_CONFIG');

/** The one place that reads process.env: a bad variable stops start-up with its name. */
@Global()
@Module({
  providers: [{ provide: APP_CONFIG, useFactory: (): AppConfig => loadConfig(process.env) }],
  exports: [APP_CONFIG],
})
export class ConfigModule {}

/** The configuration outside a Nest container (CLI, scripts); same validation. */
export function configFromEnvironment(): AppConfig {
  return loadConfig(process.env);
}

/** The raw environment, for the one thing that is not configuration: the operator CLI reading a
 * secret from a variable the operator names (`--key-from-env VAR`). */
export function rawEnvironment(): Readonly<Record<string, string | undefined>> {
  return process.env;
}
