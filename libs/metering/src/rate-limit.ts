/** Requests per sliding minute per project (contract section 8). */
export const RATE_LIMIT_PER_MINUTE = 60;

/**
 * Whether a request is within its project's limit, from what the `rate_limit_hit` function
 * answered for it (migration 1763700000056; it counts this hit too, with an advisory lock per
 * project, so the count is exact across api replicas): `count`, the fullest sliding minute the hit
 * falls in before it, and for a refused one the seconds after which its retry is admitted (a
 * promise, DESIGN.md section 11: PostgreSQL reserved a hit for it then), at least 1 s.
 */
export function rateLimitVerdict(hits: { count: number; retryAfterSeconds: number }): {
  allowed: boolean;
  retryAfterSeconds: number;
} {
  if (hits.count < RATE_LIMIT_PER_MINUTE) return { allowed: true, retryAfterSeconds: 0 };
  return { allowed: false, retryAfterSeconds: Math.max(1, hits.retryAfterSeconds) };
}
