import type { INestApplication, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ApiModule } from './app.module.js';

/** Builds the api application (used by main.ts and by the end-to-end tests). */
export async function createApiApp(options: { logLevels?: LogLevel[] } = {}): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(ApiModule, { logger: options.logLevels ?? ['log', 'warn', 'error', 'fatal'] });
  app.disable('x-powered-by');
  app.enableShutdownHooks();
  return app;
}
