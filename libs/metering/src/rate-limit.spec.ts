import { RATE_LIMIT_PER_MINUTE, rateLimitVerdict } from './rate-limit.js';

describe('rateLimitVerdict', () => {
  const now = Date.UTC(2026, 10, 23, 12, 0, 0);

  it('allows the 60th request of a minute and refuses the 61st', () => {
    expect(rateLimitVerdict({ count: RATE_LIMIT_PER_MINUTE - 1, oldest: new Date(now - 1000) }, now)).toEqual({
      allowed: true,
      retryAfterSeconds: 0,
    });
    expect(rateLimitVerdict({ count: RATE_LIMIT_PER_MINUTE, oldest: new Date(now - 1000) }, now).allowed).toBe(false);
  });

  it('tells a refused caller to retry when the oldest hit leaves the minute, rounded up', () => {
    expect(rateLimitVerdict({ count: 60, oldest: new Date(now - 15_500) }, now).retryAfterSeconds).toBe(45);
    expect(rateLimitVerdict({ count: 75, oldest: new Date(now - 1) }, now).retryAfterSeconds).toBe(60);
  });

  it('never says less than one second', () => {
    expect(rateLimitVerdict({ count: 60, oldest: new Date(now - 60_000) }, now).retryAfterSeconds).toBe(1);
    expect(rateLimitVerdict({ count: 60, oldest: null }, now).retryAfterSeconds).toBe(60);
  });
});
