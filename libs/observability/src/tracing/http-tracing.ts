import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { NextFunction, Request, Response } from 'express';
import { pathForTelemetry } from '../logging/http-logging.js';
import { activeTracing, requestAttributes } from './tracing.js';

/**
 * Express middleware that opens the SERVER span of each HTTP request, continuing the caller's
 * trace when it sends a W3C `traceparent` (a malformed one starts a new trace). The span is named
 * by method and route, and gets `request_id` (the `X-Request-Id` the api answers with) and
 * `project_id` (the authenticated project) when it ends. Undefined with tracing off, so the api
 * adds nothing to its hot path.
 */
export function httpTracing(): ((req: Request, res: Response, next: NextFunction) => void) | undefined {
  const tracing = activeTracing();
  if (!tracing) return undefined;
  return (req, res, next) => {
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracing.tracer.startSpan(
      req.method,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': req.method, 'url.path': pathForTelemetry(req.path) },
      },
      parent,
    );
    const active = trace.setSpan(parent, span);
    // Body parsing and streams call back from the socket's context: bound, they keep the span's.
    context.bind(active, req);
    context.bind(active, res);
    res.once('close', () => {
      const route = (req.route as { path?: string } | undefined)?.path;
      if (route) span.updateName(`${req.method} ${req.baseUrl}${route}`);
      const principal = (req as { principal?: { project?: { id?: unknown } } }).principal;
      span.setAttributes({
        'http.response.status_code': res.statusCode,
        ...(route ? { 'http.route': `${req.baseUrl}${route}` } : {}),
        ...requestAttributes({ requestId: res.getHeader('x-request-id'), projectId: principal?.project?.id }),
      });
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(active, next);
  };
}
