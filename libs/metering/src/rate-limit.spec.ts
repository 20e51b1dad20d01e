import { RATE_LIMIT_PER_MINUTE, rateLimitVerdict } from './rate-limit.js';

describe('rateLimitVerdict', () => {
  it('allows the 60th request of a minute and refuses the 61st', () => {
    expect(rateLimitVerdict({ count: RATE_LIMIT_PER_MINUTE - 1, retryAfterSeconds: 0 })).toEqual({
      allowed: true,
      retryAfterSeconds: 0,
    });
    expect(rateLimitVerdict({ count: RATE_LIMIT_PER_MINUTE, retryAfterSeconds: 7 })).toEqual({
      allowed: false,
      retryAfterSeconds: 7,
    });
  });

  it('never says less than one second', () => {
    expect(rateLimitVerdict({ count: 75, retryAfterSeconds: 0 }).retryAfterSeconds).toBe(1);
  });
});
