import { creditsFor, quotaFigures } from './pricing.js';

const surcharges = { chat: 0, research: 2, documents: 0, code: 2, data: 1, files: 0 } as const;

describe('creditsFor', () => {
  it('is 1 plus the surcharge of each capability, each counted once', () => {
    expect(creditsFor([], surcharges)).toBe(1);
    expect(creditsFor(['chat'], surcharges)).toBe(1);
    expect(creditsFor(['chat', 'research', 'code', 'data'], surcharges)).toBe(6);
    expect(creditsFor(['code', 'code'], surcharges)).toBe(3);
  });
});

describe('quotaFigures', () => {
  it('reports the remaining requests and the end of the period', () => {
    const q = quotaFigures(new Date('2026-01-15T00:00:00Z'), 100, 30, new Date('2026-03-20T00:00:00Z'));
    expect(q).toEqual({
      limit: 100,
      remaining: 70,
      reset: Date.parse('2026-04-15T00:00:00Z') / 1000,
      retryAfterSeconds: 26 * 86400,
    });
  });

  it('never reports a negative remainder', () => {
    expect(quotaFigures(new Date('2026-01-15T00:00:00Z'), 100, 130, new Date('2026-03-20T00:00:00Z')).remaining).toBe(
      0,
    );
  });
});
