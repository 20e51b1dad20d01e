import type { NextFunction, Request, Response } from 'express';
import { httpRequestDuration } from './definitions.js';

/** Express middleware recording every request's duration by route template (`/v1/agent/:id`,
 * never the path itself, so ids do not become series) and status. Registered first. */
export function httpMetrics(req: Request, res: Response, next: NextFunction): void {
  const end = httpRequestDuration.startTimer();
  res.once('close', () => {
    const route = req.route ? `${req.baseUrl}${String((req.route as { path: string }).path)}` : 'unmatched';
    end({ method: req.method, route, status_code: String(res.statusCode) });
  });
  next();
}
