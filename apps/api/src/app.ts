import type { INestApplication, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ApiModule } from './app.module.js';
import { serveOpenApi } from './openapi/openapi.js';

/** Largest accepted request body (DESIGN.md section 7): larger gives 413 payload_too_large. */
export const BODY_LIMIT = '10mb';

/** Builds the api application (used by main.ts and by the end-to-end tests). */
export async function createApiApp(options: { logLevels?: LogLevel[] } = {}): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(ApiModule, {
    logger: options.logLevels ?? ['log', 'warn', 'error', 'fatal'],
    bodyParser: false,
  });
  app.disable('x-powered-by');
  // Any content type is read as JSON: a client that forgets the header still gets a contract
  // error for a bad body, not a silent empty one.
  app.useBodyParser('json', { limit: BODY_LIMIT, type: () => true, strict: false });
  app.enableShutdownHooks();
  serveOpenApi(app);
  return app;
}
