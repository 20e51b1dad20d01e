import type { Server } from 'node:http';
import { Logger, type INestApplication, type LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { configFromEnvironment } from '#libs/config';
import { useTransportSecurity } from '#libs/http-edge';
import { ServiceError } from '#libs/contracts';
import {
  createLogger,
  httpLogging,
  httpMetrics,
  httpTracing,
  NestPinoLogger,
  serveMetricsBeside,
} from '#libs/observability';
import { ApiModule } from './app.module.js';
import { ApiKeyMiddleware } from './auth/api-key.middleware.js';
import { bodyParser } from './body-limits.js';
import { JsonThread } from './json-off-thread.js';
import { CodecAccess } from './codec/codec-access.js';
import { methodNotAllowed } from './openapi/method-not-allowed.js';
import { serveOpenApi } from './openapi/openapi.js';

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
    for (const child of Object.values(v))
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return deepest;
}

function refuseDeepBodies(req: Request, _res: Response, next: NextFunction): void {
  if (jsonDepth(req.body) > MAX_BODY_DEPTH) {
    next(
      new ServiceError(
        'invalid_body',
        `The request body nests arrays and objects more than ${MAX_BODY_DEPTH} levels deep.`,
      ),
    );
    return;
  }
  next();
}

/** How long a stopping api lets its in-flight requests finish before it closes anyway. */
export const DRAIN_TIMEOUT_MS = 30_000;

/** The requests a stopping api waits for, and its open event streams, which it ends. */
class InFlight {
  draining = false;
  private readonly open = new Set<Response>();
  private idle: (() => void) | undefined;

  readonly track = (req: Request, res: Response, next: NextFunction): void => {
    // A request that arrives on a kept-alive connection during the drain is still answered, but
    // the connection is not kept: the client's next request goes to another replica.
    if (this.draining) res.setHeader('Connection', 'close');
    this.open.add(res);
    res.once('close', () => {
      this.open.delete(res);
      if (this.open.size === 0) this.idle?.();
    });
    next();
  };

  /** Ends every event stream (the client resumes with Last-Event-ID elsewhere) and resolves when
   * every other request has been answered, or after `timeoutMs`. */
  async settle(timeoutMs: number): Promise<number> {
    for (const res of this.open) {
      if (String(res.getHeader('content-type') ?? '').startsWith('text/event-stream')) res.end();
    }
    if (this.open.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => (this.idle = resolve)),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
      ]);
      clearTimeout(timer);
    }
    return this.open.size;
  }
}

const inFlight = new WeakMap<INestApplication, InFlight>();

/**
 * Stops the api without failing what it is doing: it stops accepting connections, ends its event
 * streams cleanly, lets every in-flight request finish (at most `timeoutMs`), and only then closes
 * the application (the PostgreSQL pool, the Temporal connection, the Kafka consumers), which
 * Nest's own shutdown hook would close first. main.ts calls it on SIGTERM and SIGINT.
 */
export async function drainAndClose(app: INestApplication, timeoutMs = DRAIN_TIMEOUT_MS): Promise<void> {
  const logger = new Logger('api');
  const tracker = inFlight.get(app);
  const server = app.getHttpServer() as Server;
  if (tracker) tracker.draining = true;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const left = (await tracker?.settle(timeoutMs)) ?? 0;
  if (left > 0) logger.warn(`closing with ${left} request(s) still in flight after ${timeoutMs / 1000} s`);
  server.closeAllConnections();
  await closed;
  await app.close();
  logger.log('stopped');
}

/** Builds the api application (used by main.ts and by the end-to-end tests). */
export async function createApiApp(options: { logLevels?: LogLevel[] } = {}): Promise<INestApplication> {
  const config = configFromEnvironment();
  const logger = new NestPinoLogger(createLogger({ app: 'api', format: config.logFormat, level: config.logLevel }));
  if (options.logLevels) logger.setLogLevels(options.logLevels);
  const app = await NestFactory.create<NestExpressApplication>(ApiModule, { logger, bodyParser: false });
  app.disable('x-powered-by');
  (app.getHttpServer() as Server).keepAliveTimeout = config.keepAliveTimeoutMs;
  // First, so the request's span covers authentication and continues a client's traceparent.
  const tracing = httpTracing();
  if (tracing) app.use(tracing);
  useTransportSecurity(app, { publicUrl: config.publicBaseUrl, trustedProxyHops: config.trustedProxyHops });
  app.use(httpMetrics);
  app.use(httpLogging(logger.pino));
  const tracker = new InFlight();
  inFlight.set(app, tracker);
  app.use(tracker.track);
  // In this order (DESIGN.md section 7: 401, then 429, then 400): the key and the rate limit
  // (/v1) or the operator token (/codec) before a byte of the body is read, so an unknown
  // caller's body is never parsed; then the body, with the limit of who the caller turned out
  // to be (body-limits.ts: 64 KB for anyone not authenticated, on any path); before the body, a
  // method the OpenAPI document does not list on one of its paths is 405. Failures of any step
  // skip the rest and reach the contract's exception filter.
  app.use(app.get(ApiKeyMiddleware).use);
  app.use(app.get(CodecAccess).use);
  app.use(methodNotAllowed(app));
  app.use(bodyParser(new JsonThread({ databaseUrl: config.databaseUrl })));
  app.use(refuseDeepBodies);
  // No Nest shutdown hooks: they would close the pool and the Temporal connection under requests
  // still in flight. main.ts drains first (drainAndClose).
  serveOpenApi(app);
  // Prometheus's scrape on a port of its own (API_METRICS_PORT), never on the public one (issue 44:
  // anyone could read it there).
  await serveMetricsBeside(app.getHttpServer() as Server, config.metrics.apiPort, config.metrics.host);
  return app;
}
