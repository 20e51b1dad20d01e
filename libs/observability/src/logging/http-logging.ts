import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { currentLogContext, runWithLogContext } from './log-context.js';

/** Express middleware giving each HTTP request its own log context (the api key's project and the
 * request id are added to it on the way) and writing one line when the response has finished. */
export function httpLogging(logger: Logger): (req: Request, res: Response, next: NextFunction) => void {
  return (req, res, next) => {
    const started = performance.now();
    runWithLogContext({}, () => {
      const context = currentLogContext();
      res.once('close', () => {
        const route = req.route ? `${req.baseUrl}${String((req.route as { path: string }).path)}` : undefined;
        // The resource in the path, when the handler did not name it itself.
        const id = typeof req.params?.id === 'string' ? req.params.id : undefined;
        const ids = route?.startsWith('/v1/agent/')
          ? { request_id: id }
          : route?.startsWith('/v1/sessions/')
            ? { session_id: id }
            : {};
        logger.info(
          {
            context: 'http',
            ...ids,
            ...context,
            method: req.method,
            route: route ?? 'unmatched',
            status_code: res.statusCode,
            duration_ms: Math.round(performance.now() - started),
            aborted: !res.writableFinished || undefined,
          },
          `${req.method} ${route ?? pathForTelemetry(req.path)} ${res.statusCode}`,
        );
      });
      next();
    });
  };
}

/** `/codec/<token>/<op>`: the one path that may carry a secret, the codec endpoint's operator
 * token (taken there only with MAS_CODEC_TOKEN_IN_PATH, for the local dev server's UI; a caller
 * may send one anyway: apps/api/src/codec/codec-access.ts). */
const SECRET_IN_PATH = /^(\/codec\/)[^/]+(\/[^/]+\/?)$/i;

/** A request's path as logs and traces may carry it: the codec token replaced by `:token`. */
export function pathForTelemetry(path: string): string {
  return path.replace(SECRET_IN_PATH, '$1:token$2');
}
