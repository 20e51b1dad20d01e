import type { INestApplication } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ServiceError } from '#libs/contracts';
import { buildOpenApi } from './openapi.js';

interface Route {
  readonly pattern: RegExp;
  /** The methods the document lists on the path, and HEAD where GET is (Express answers it). */
  readonly allow: readonly string[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** The document's paths as Express matches them: case-insensitive, a trailing slash allowed, a
 * path parameter one segment. */
function routesOf(paths: Record<string, Partial<Record<(typeof METHODS)[number], unknown>>>): Route[] {
  return Object.entries(paths).map(([path, item]) => {
    const source = path
      .split(/\{[^}]+\}/)
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('[^/]+');
    const allow = METHODS.filter((m) => item[m]).map((m) => m.toUpperCase());
    return {
      pattern: new RegExp(`^${source}/?$`, 'i'),
      allow: allow.includes('GET') && !allow.includes('HEAD') ? [...allow, 'HEAD'] : allow,
    };
  });
}

/**
 * 405 method_not_allowed, with `Allow`, for a method the OpenAPI document does not list on one of
 * its paths (TRACE, OPTIONS, PUT on /v1/agent, ...): without it such a request fell through to
 * the 404 of an unknown route. The routes come from the document itself, so the two cannot
 * disagree. Registered after authentication (DESIGN.md section 7: 401 and 429 first) and before
 * the body parser (such a body is never read).
 */
export function methodNotAllowed(app: INestApplication): RequestHandler {
  let routes: Route[] | undefined;
  return (req: Request, _res: Response, next: NextFunction) => {
    // Built once, at the first request, when every controller is mapped.
    routes ??= routesOf(buildOpenApi(app).paths as Parameters<typeof routesOf>[0]);
    const route = routes.find((r) => r.pattern.test(req.path));
    if (!route || route.allow.includes(req.method)) return next();
    const allow = route.allow.join(', ');
    next(
      new ServiceError(
        'method_not_allowed',
        `${req.method} is not allowed on this path; it takes ${allow}. See the API reference at /docs.`,
        { Allow: allow },
      ),
    );
  };
}
