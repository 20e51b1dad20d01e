/** The anchor of a project's billing periods: the day it was created (00:00 UTC). Periods start
 * monthly on that day, clamped to a shorter month's last day and back on it the month after (a
 * project created on the 31st: Jan 31, Feb 28, Mar 31). Never a past period's start, which a
 * short month clamped. */
export function billingAnchor(createdAt: Date): Date {
  return new Date(Date.UTC(createdAt.getUTCFullYear(), createdAt.getUTCMonth(), createdAt.getUTCDate()));
}

/** The billing period containing `now`, for periods that start monthly on `anchor`'s day. */
export function currentPeriod(anchor: Date, now: Date): { start: Date; end: Date } {
  let months = (now.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + (now.getUTCMonth() - anchor.getUTCMonth());
  let start = addMonths(anchor, months);
  if (start > now) start = addMonths(anchor, --months);
  return { start, end: addMonths(anchor, months + 1) };
}

/** `date` plus `months`, clamped to the last day of a shorter month (Jan 31 + 1 month = Feb 28/29). */
export function addMonths(date: Date, months: number): Date {
  const y = date.getUTCFullYear();
  const m = date.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      y,
      m,
      Math.min(date.getUTCDate(), lastDay),
      date.getUTCHours(),
      date.getUTCMinutes(),
      date.getUTCSeconds(),
      date.getUTCMilliseconds(),
    ),
  );
}
