import fc from 'fast-check';
import { addMonths, billingAnchor, currentPeriod } from './billing-period.js';
import { quotaFigures } from './pricing.js';

const d = (s: string) => new Date(s);

describe('billing periods', () => {
  it('start on the anchor day each month', () => {
    expect(currentPeriod(d('2026-01-15T00:00:00Z'), d('2026-03-20T10:00:00Z'))).toEqual({
      start: d('2026-03-15T00:00:00Z'),
      end: d('2026-04-15T00:00:00Z'),
    });
    expect(currentPeriod(d('2026-01-15T00:00:00Z'), d('2026-03-10T10:00:00Z'))).toEqual({
      start: d('2026-02-15T00:00:00Z'),
      end: d('2026-03-15T00:00:00Z'),
    });
  });

  it('include the start instant and exclude the end', () => {
    expect(currentPeriod(d('2026-01-15T00:00:00Z'), d('2026-02-15T00:00:00Z')).start).toEqual(
      d('2026-02-15T00:00:00Z'),
    );
  });

  it('clamp to the end of shorter months', () => {
    expect(addMonths(d('2026-01-31T00:00:00Z'), 1)).toEqual(d('2026-02-28T00:00:00Z'));
    expect(addMonths(d('2028-01-31T00:00:00Z'), 1)).toEqual(d('2028-02-29T00:00:00Z'));
  });

  it("never drift: every period of a project starts on its creation day, or a shorter month's last day, and contains now (property)", () => {
    const day = 24 * 3600 * 1000;
    fc.assert(
      fc.property(
        fc.date({ min: d('2020-01-01T00:00:00Z'), max: d('2030-01-01T00:00:00Z'), noInvalidDate: true }),
        fc.integer({ min: 0, max: 2000 }),
        fc.integer({ min: 0, max: day - 1 }),
        (created, days, ms) => {
          const now = new Date(created.getTime() + days * day + ms);
          const anchor = billingAnchor(created);
          const { start, end } = currentPeriod(anchor, now);
          expect(start.getTime()).toBeLessThanOrEqual(now.getTime());
          expect(end.getTime()).toBeGreaterThan(now.getTime());
          for (const boundary of [start, end]) {
            const lastDay = new Date(Date.UTC(boundary.getUTCFullYear(), boundary.getUTCMonth() + 1, 0)).getUTCDate();
            expect(boundary.getUTCDate()).toBe(Math.min(anchor.getUTCDate(), lastDay));
            expect(boundary.getUTCHours() + boundary.getUTCMinutes()).toBe(0);
          }
        },
      ),
    );
  });

  it("advertise the reset of a project created on the 31st at the month's end, not the 28th", () => {
    const anchor = billingAnchor(d('2026-01-31T09:30:00Z'));
    expect(quotaFigures(anchor, 10, 0, d('2026-11-25T12:00:00Z')).reset).toBe(Date.UTC(2026, 10, 30) / 1000);
    expect(quotaFigures(anchor, 10, 0, d('2026-02-28T12:00:00Z')).reset).toBe(Date.UTC(2026, 2, 31) / 1000);
  });
});
