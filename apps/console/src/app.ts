import type { Server } from 'node:http';
import { type INestApplication, type LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { ConsoleAccountsService } from '#libs/accounts';
import { configFromEnvironment } from '#libs/config';
import { useTransportSecurity } from '#libs/http-edge';
import { createLogger, httpLogging, httpMetrics, NestPinoLogger, serveMetricsBeside } from '#libs/observability';
import { COOKIE_NAMES } from './auth.controller.js';
import { ConsoleModule } from './console.module.js';
import { consoleRequests, type CookieNames } from './web/console-request.js';

/** No script, style or frame from anywhere but the console; no inline script; no referrer (one-time links are in URLs). */
const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

/** Builds the console application (main.ts and the tests). */
export async function createConsoleApp(options: { logLevels?: LogLevel[] } = {}): Promise<INestApplication> {
  const config = configFromEnvironment();
  const logger = new NestPinoLogger(createLogger({ app: 'console', format: config.logFormat, level: config.logLevel }));
  if (options.logLevels) logger.setLogLevels(options.logLevels);
  const app = await NestFactory.create<NestExpressApplication>(ConsoleModule, { logger, bodyParser: false });
  app.disable('x-powered-by');
  (app.getHttpServer() as Server).keepAliveTimeout = config.keepAliveTimeoutMs;
  // req.ip: the client's address as the configured proxies in front of the console saw it (the
  // sign-in throttle and the audit log use it); without proxies, the socket's peer. The same hops
  // say whether the console is served over HTTPS (HSTS).
  useTransportSecurity(app, { publicUrl: config.console.publicUrl, trustedProxyHops: config.console.trustedProxyHops });
  app.use(httpMetrics);
  app.use(httpLogging(logger.pino));
  app.use((_req: Request, res: Response, next: NextFunction) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    next();
  });
  app.useBodyParser('urlencoded', { extended: false, limit: '32kb', parameterLimit: 50 });
  app.use(consoleRequests(app.get(ConsoleAccountsService), app.get<CookieNames>(COOKIE_NAMES)));
  // Prometheus's scrape on a port of its own (CONSOLE_METRICS_PORT), never on the public one.
  await serveMetricsBeside(app.getHttpServer() as Server, config.metrics.consolePort, config.metrics.host);
  return app;
}
