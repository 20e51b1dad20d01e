/** Requests per sliding minute per project (contract section 8). */
export const RATE_LIMIT_PER_MINUTE = 60;

/**
 * Whether a request is within its project's limit, given the hits of the sliding minute before
 * it (what the `rate_limit_hit` function answers, migration 1763700000018; it records this hit
 * too, with an advisory lock per project, so the count is exact across api replicas), and when a
 * refused caller may retry: once the oldest of those hits leaves the minute, at least 1 s.
 */
export function rateLimitVerdict(
  hits: { count: number; oldest: Date | null },
  now = Date.now(),
): { allowed: boolean; retryAfterSeconds: number } {
  if (hits.count < RATE_LIMIT_PER_MINUTE) return { allowed: true, retryAfterSeconds: 0 };
  const oldest = hits.oldest?.getTime() ?? now;
  return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((oldest + 60_000 - now) / 1000)) };
}
