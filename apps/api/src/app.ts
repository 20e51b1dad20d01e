import type { INestApplication, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { ServiceError } from '#libs/contracts';
import { ApiModule } from './app.module.js';
import { ApiKeyMiddleware } from './auth/api-key.middleware.js';
import { serveOpenApi } from './openapi/openapi.js';

/** Largest accepted request body (DESIGN.md section 7): larger gives 413 payload_too_large. */
export const BODY_LIMIT = '10mb';

/** Deepest nesting of arrays and objects a body may have: far beyond any real request (a tool's
 * JSON Schema included), and well below what recursive code (hashing, serialising) survives. */
export const MAX_BODY_DEPTH = 128;

/** How deeply `value` nests, counted without recursion (a hostile body must not overflow the stack). */
export function jsonDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    deepest = Math.max(deepest, depth + 1);
    if (deepest > MAX_BODY_DEPTH) return deepest;
    for (const child of Object.values(v)) if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return deepest;
}

function refuseDeepBodies(req: Request, _res: Response, next: NextFunction): void {
  if (jsonDepth(req.body) > MAX_BODY_DEPTH) {
    next(new ServiceError('invalid_body', `The request body nests arrays and objects more than ${MAX_BODY_DEPTH} levels deep.`));
    return;
  }
  next();
}

/** Builds the api application (used by main.ts and by the end-to-end tests). */
export async function createApiApp(options: { logLevels?: LogLevel[] } = {}): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(ApiModule, {
    logger: options.logLevels ?? ['log', 'warn', 'error', 'fatal'],
    bodyParser: false,
  });
  app.disable('x-powered-by');
  // In this order (DESIGN.md section 7: 401, then 429, then 400): the key and the rate limit
  // before a byte of the body is read, so an unknown caller's body is never parsed. Failures of
  // either step skip the rest and reach the contract's exception filter.
  app.use(app.get(ApiKeyMiddleware).use);
  // Any content type is read as JSON: a client that forgets the header still gets a contract
  // error for a bad body, not a silent empty one.
  app.useBodyParser('json', { limit: BODY_LIMIT, type: () => true, strict: false });
  app.use(refuseDeepBodies);
  app.enableShutdownHooks();
  serveOpenApi(app);
  return app;
}
