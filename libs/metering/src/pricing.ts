import type { Capability } from '#libs/contracts';
import { currentPeriod } from './billing-period.js';

/** The credit formula, the one place it lives: 1 + the surcharge of each capability. Used for the
 * reservation (the capabilities offered) and for the charge (the capabilities used). */
export function creditsFor(
  capabilities: Iterable<Capability>,
  surcharges: Readonly<Partial<Record<Capability, number>>>,
): number {
  let credits = 1;
  for (const c of new Set(capabilities)) credits += surcharges[c] ?? 0;
  return credits;
}

/** The monthly quota as the X-RateLimit-* headers (and a quota_exceeded Retry-After) report it. */
export interface QuotaFigures {
  readonly limit: number;
  readonly remaining: number;
  /** Unix seconds when the billing period ends. */
  readonly reset: number;
  /** Seconds until then (at least 1). */
  readonly retryAfterSeconds: number;
}

export function quotaFigures(
  periodAnchor: Date,
  monthlyQuota: number,
  requestsUsed: number,
  now: Date = new Date(),
): QuotaFigures {
  const { end } = currentPeriod(periodAnchor, now);
  return {
    limit: monthlyQuota,
    remaining: Math.max(0, monthlyQuota - requestsUsed),
    reset: Math.floor(end.getTime() / 1000),
    retryAfterSeconds: Math.max(1, Math.ceil((end.getTime() - now.getTime()) / 1000)),
  };
}
