import { randomUUID } from 'node:crypto';
import { jest } from '@jest/globals';
import { EventStore } from '#libs/events';
import { testConfig } from '../../../test/support/config.js';
import { Fixtures } from '../../../test/support/fixtures.js';
import { addMonths, billingAnchor, currentPeriod } from './billing-period.js';
import { MeteringService, type AdmissionRequest } from './metering.service.js';

const config = testConfig();
const DAY = 86_400_000;

/**
 * Issue 44: the billing period was decided by each api replica's clock. A replica whose clock ran
 * ahead rolled the project into the next period (its quota counter zeroed), the next one, behind,
 * rolled it back (zeroed again). PostgreSQL's clock decides now, and a period once begun never goes
 * back. Two "replicas" here are the same service with their process clock (Date) set apart: only
 * Date is faked, the database's timers and sockets run as usual.
 */
describe('the billing period under clock skew (real PostgreSQL)', () => {
  let fixtures: Fixtures;
  let metering: MeteringService;
  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    metering = new MeteringService(fixtures.db, new EventStore());
  });
  afterAll(async () => {
    jest.useRealTimers();
    await fixtures.close();
  });

  /** Runs `work` with this process's clock `skewMs` away from the real one (one "replica"). */
  const onReplica = async <T>(skewMs: number, work: () => Promise<T>): Promise<T> => {
    jest.useFakeTimers({
      now: Date.now() + skewMs,
      doNotFake: [
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'requestAnimationFrame',
        'cancelAnimationFrame',
        'requestIdleCallback',
        'cancelIdleCallback',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout',
      ],
    });
    try {
      return await work();
    } finally {
      jest.useRealTimers();
    }
  };

  /** A project whose next period begins tomorrow (its anchor day is tomorrow's, two months ago). */
  const projectBeforeBoundary = async () => {
    const { project } = await fixtures.project({ credits: 100 });
    const createdAt = addMonths(new Date(Date.now() + DAY), -2);
    const period = currentPeriod(billingAnchor(createdAt), new Date());
    await fixtures.db.query(`update projects set created_at = $2, period_start = $3, requests_used = 5 where id = $1`, [
      project.id,
      createdAt,
      period.start,
    ]);
    return { projectId: project.id, createdAt, period };
  };
  const projectRow = async (projectId: string) =>
    (
      (await fixtures.db.query(`select period_start, requests_used from projects where id = $1`, [projectId])) as [
        { period_start: Date; requests_used: number },
      ]
    )[0];

  it('counts on in the period PostgreSQL is in, whatever the clocks of the replicas that admit (admit)', async () => {
    const { projectId, period } = await projectBeforeBoundary();
    // Replica A runs two days ahead (past tomorrow's boundary), replica B on time; they alternate.
    for (const skew of [2 * DAY, 0, 2 * DAY, 0]) {
      await onReplica(skew, () =>
        metering.admit({ requestId: randomUUID(), projectId, credits: 1, monthlyQuota: 100 }),
      );
    }
    const row = await projectRow(projectId);
    expect(row.period_start.toISOString()).toBe(period.start.toISOString());
    expect(row.requests_used).toBe(5 + 4);
  });

  it('counts on in the period PostgreSQL is in, whatever the clocks of the replicas that admit (admitRequest)', async () => {
    const { projectId, period, createdAt } = await projectBeforeBoundary();
    const admission = (): AdmissionRequest => ({
      requestId: randomUUID(),
      projectId,
      credits: 1,
      monthlyQuota: 100,
      // What the api passed before (its own clock's period); the admission must not depend on it.
      ...({ periodStart: currentPeriod(billingAnchor(createdAt), new Date()).start } as object),
      pickupBy: new Date(Date.now() + 60_000),
      inputBytes: 0,
      caps: { runsInFlight: 100, inputBytesPerDay: 1_000_000 },
    });
    for (const skew of [2 * DAY, 0, 2 * DAY, 0]) {
      await onReplica(skew, () => metering.admitRequest(admission()));
    }
    const row = await projectRow(projectId);
    expect(row.period_start.toISOString()).toBe(period.start.toISOString());
    expect(row.requests_used).toBe(5 + 4);
  });

  it('never goes back to a period before the one begun, and rolls forward to the period PostgreSQL is in', async () => {
    const { projectId, period } = await projectBeforeBoundary();
    // Moved forward already (say by the previous release, on a clock ahead): it stays there.
    await fixtures.db.query(`update projects set period_start = $2, requests_used = 3 where id = $1`, [
      projectId,
      period.end,
    ]);
    await onReplica(0, () => metering.admit({ requestId: randomUUID(), projectId, credits: 1, monthlyQuota: 100 }));
    let row = await projectRow(projectId);
    expect(row.period_start.toISOString()).toBe(period.end.toISOString());
    expect(row.requests_used).toBe(4);
    // A period that has ended by PostgreSQL's clock (no request for a month): the counter starts
    // again at the current one, even from a replica whose clock is still in the old one.
    await fixtures.db.query(`update projects set period_start = $2, requests_used = 7 where id = $1`, [
      projectId,
      addMonths(period.start, -1),
    ]);
    await onReplica(-40 * DAY, () =>
      metering.admit({ requestId: randomUUID(), projectId, credits: 1, monthlyQuota: 100 }),
    );
    row = await projectRow(projectId);
    expect(row.period_start.toISOString()).toBe(period.start.toISOString());
    expect(row.requests_used).toBe(1);
  });
});
