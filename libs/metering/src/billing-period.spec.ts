import { addMonths, currentPeriod } from './billing-period.js';

const d = (s: string) => new Date(s);

describe('billing periods', () => {
  it('start on the anchor day each month', () => {
    expect(currentPeriod(d('2026-01-15T00:00:00Z'), d('2026-03-20T10:00:00Z'))).toEqual({ start: d('2026-03-15T00:00:00Z'), end: d('2026-04-15T00:00:00Z') });
    expect(currentPeriod(d('2026-01-15T00:00:00Z'), d('2026-03-10T10:00:00Z'))).toEqual({ start: d('2026-02-15T00:00:00Z'), end: d('2026-03-15T00:00:00Z') });
  });

  it('include the start instant and exclude the end', () => {
    expect(currentPeriod(d('2026-01-15T00:00:00Z'), d('2026-02-15T00:00:00Z')).start).toEqual(d('2026-02-15T00:00:00Z'));
  });

  it('clamp to the end of shorter months', () => {
    expect(addMonths(d('2026-01-31T00:00:00Z'), 1)).toEqual(d('2026-02-28T00:00:00Z'));
    expect(addMonths(d('2028-01-31T00:00:00Z'), 1)).toEqual(d('2028-02-29T00:00:00Z'));
  });
});
