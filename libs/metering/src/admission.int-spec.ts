import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { DEFAULT_CAPABILITY_SURCHARGES, EVENT_TYPES, type StopRecord } from '#libs/contracts';
import { EventStore } from '#libs/events';
import { testConfig } from '../../../test/support/config.js';
import { Fixtures } from '../../../test/support/fixtures.js';
import { MeteringService, type AdmissionRequest } from './metering.service.js';

const config = testConfig();

/** Admission in the api (DESIGN.md section 10) and the per-project caps it decides (issue 28),
 * against the real PostgreSQL: MeteringService.admitRequest, pickUp and the reconciler's release. */
describe('MeteringService admission in the api', () => {
  let fixtures: Fixtures;
  let metering: MeteringService;
  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    metering = new MeteringService(fixtures.db, new EventStore());
  });
  afterAll(async () => {
    await fixtures.close();
  });

  const balance = async (projectId: string) => (await fixtures.accounts.findProject(projectId)).creditBalance;
  const admission = (projectId: string, _createdAt: Date, patch: Partial<AdmissionRequest> = {}): AdmissionRequest => ({
    requestId: randomUUID(),
    projectId,
    credits: 3,
    monthlyQuota: 100,
    pickupBy: new Date(Date.now() + 60_000),
    inputBytes: 0,
    caps: { runsInFlight: 100, inputBytesPerDay: 1_000_000 },
    ...patch,
  });
  const stop = (requestId: string, projectId: string): StopRecord => ({
    requestId,
    projectId,
    plan: 'pro',
    stop: 1,
    status: 'completed',
    capabilitiesUsed: ['chat'],
    surcharges: DEFAULT_CAPABILITY_SURCHARGES,
    inputTokens: 1,
    outputTokens: 1,
  });

  it('reserves once per request id, and refuses quota and credits without a reservation', async () => {
    const { project } = await fixtures.project({ credits: 5 });
    const first = admission(project.id, project.createdAt);
    expect(await metering.admitRequest(first)).toEqual({ ok: true, balance: 2, requestsUsed: 1 });
    // A retry (same Idempotency-Key, same request id) is admitted again, without a second reservation.
    expect(await metering.admitRequest(first)).toEqual({ ok: true, balance: 2, requestsUsed: 1 });
    expect(await metering.admitRequest(admission(project.id, project.createdAt))).toMatchObject({
      ok: false,
      error: { code: 'insufficient_credits' },
      balance: 2,
    });
    expect(
      await metering.admitRequest(admission(project.id, project.createdAt, { credits: 1, monthlyQuota: 1 })),
    ).toMatchObject({ ok: false, error: { code: 'quota_exceeded' }, requestsUsed: 1 });
    const rows: unknown[] = await fixtures.db.query(`select 1 from credit_ledger where project_id = $1`, [project.id]);
    expect(rows).toHaveLength(1);
    expect(await balance(project.id)).toBe(2);
  });

  it('writes the accepted event when the workflow takes the request up, once, and refuses one taken up after its deadline', async () => {
    const { project } = await fixtures.project({ credits: 20 });
    const inTime = admission(project.id, project.createdAt);
    await metering.admitRequest(inTime);
    expect(await metering.pickUp(inTime)).toEqual({ ok: true, balance: 17, requestsUsed: 1 });
    expect(await metering.pickUp(inTime)).toEqual({ ok: true, balance: 17, requestsUsed: 1 });
    const accepted: unknown[] = await fixtures.db.query(`select 1 from events where stream_id = $1 and type = $2`, [
      `agent-request-${inTime.requestId}`,
      EVENT_TYPES.agentRequestAccepted,
    ]);
    expect(accepted).toHaveLength(1);
    // Taken up, then settled at its first stop: a re-run of the step still goes on.
    await metering.recordStop(stop(inTime.requestId, project.id));
    expect(await metering.pickUp(inTime)).toMatchObject({ ok: true });

    const late = admission(project.id, project.createdAt, { pickupBy: new Date(Date.now() - 1) });
    await metering.admitRequest(late);
    expect(await balance(project.id)).toBe(16);
    expect(await metering.pickUp(late)).toMatchObject({ ok: false, error: { code: 'compute_unavailable' } });
    expect(await balance(project.id)).toBe(19);
    expect(
      await fixtures.db.query(`select reason from credit_ledger where request_id = $1 and kind = 'settle'`, [
        late.requestId,
      ]),
    ).toEqual([{ reason: 'release' }]);
  });

  it('lets the reconciler release a reservation not taken up by its deadline, and never one taken up or not yet due', async () => {
    const { project } = await fixtures.project({ credits: 20 });
    const missed = admission(project.id, project.createdAt, { pickupBy: new Date(Date.now() - 1) });
    const due = admission(project.id, project.createdAt);
    const taken = admission(project.id, project.createdAt);
    for (const a of [missed, due, taken]) await metering.admitRequest(a);
    await metering.pickUp(taken);
    const open = await metering.openReservations(new Date(Date.now() + 1000), 10_000);
    expect(open.find((r) => r.requestId === missed.requestId)?.pickupBy).toEqual(missed.pickupBy);
    expect(open.find((r) => r.requestId === taken.requestId)?.pickupBy).toBeUndefined();
    expect(
      await metering.release({
        requestId: missed.requestId,
        projectId: project.id,
        reason: 'reconciled',
        untakenOnly: true,
      }),
    ).toBe(true);
    expect(
      await metering.release({
        requestId: due.requestId,
        projectId: project.id,
        reason: 'reconciled',
        untakenOnly: true,
      }),
    ).toBe(false);
    expect(
      await metering.release({
        requestId: taken.requestId,
        projectId: project.id,
        reason: 'reconciled',
        untakenOnly: true,
      }),
    ).toBe(false);
    expect(await balance(project.id)).toBe(14);
    // A workflow that starts after the release runs nothing.
    expect(await metering.pickUp(missed)).toMatchObject({ ok: false, error: { code: 'compute_unavailable' } });
    expect(await balance(project.id)).toBe(14);
  });

  it('caps the runs in flight by the open reservations: a settled or released one frees its place', async () => {
    const { project } = await fixtures.project({ credits: 20 });
    const caps = { runsInFlight: 2, inputBytesPerDay: 1_000_000 };
    const [a, b] = [
      admission(project.id, project.createdAt, { caps }),
      admission(project.id, project.createdAt, { caps }),
    ];
    expect(await metering.admitRequest(a)).toMatchObject({ ok: true });
    expect(await metering.admitRequest(b)).toMatchObject({ ok: true });
    expect(await metering.admitRequest(admission(project.id, project.createdAt, { caps }))).toMatchObject({
      ok: false,
      error: { code: 'rate_limited' },
      retryAfterSeconds: 1,
    });
    // A retry of an admitted request is not a new run.
    expect(await metering.admitRequest(a)).toMatchObject({ ok: true });
    // The first stop settles a: its place is free.
    await metering.pickUp(a);
    await metering.recordStop(stop(a.requestId, project.id));
    expect(await metering.admitRequest(admission(project.id, project.createdAt, { caps }))).toMatchObject({ ok: true });
    expect(await metering.admitRequest(admission(project.id, project.createdAt, { caps }))).toMatchObject({
      ok: false,
      error: { code: 'rate_limited' },
    });
    // A run that crashed holds its place until its reservation is released (the reconciler's).
    await metering.release({ requestId: b.requestId, projectId: project.id, reason: 'reconciled' });
    expect(await metering.admitRequest(admission(project.id, project.createdAt, { caps }))).toMatchObject({ ok: true });
  });

  it('caps the input bytes of a day: 429 with the seconds until the oldest leave the window, 413 for a request over the whole cap', async () => {
    const { project } = await fixtures.project({ credits: 20 });
    const caps = { runsInFlight: 100, inputBytesPerDay: 1000 };
    expect(
      await metering.admitRequest(admission(project.id, project.createdAt, { caps, inputBytes: 600 })),
    ).toMatchObject({ ok: true });
    const refused = await metering.admitRequest(admission(project.id, project.createdAt, { caps, inputBytes: 600 }));
    expect(refused).toMatchObject({ ok: false, error: { code: 'rate_limited' } });
    expect(refused.ok === false && refused.retryAfterSeconds).toBeGreaterThan(23 * 3600);
    expect(
      await metering.admitRequest(admission(project.id, project.createdAt, { caps, inputBytes: 400 })),
    ).toMatchObject({ ok: true });
    expect(
      await metering.admitRequest(admission(project.id, project.createdAt, { caps, inputBytes: 1001 })),
    ).toMatchObject({ ok: false, error: { code: 'payload_too_large' } });
    // A request without files is not counted against it.
    expect(await metering.admitRequest(admission(project.id, project.createdAt, { caps }))).toMatchObject({ ok: true });
  });

  it('never lets concurrent admissions overdraw the balance or pass the runs-in-flight cap', async () => {
    const { project } = await fixtures.project({ credits: 10 });
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        metering.admitRequest(
          admission(project.id, project.createdAt, { caps: { runsInFlight: 2, inputBytesPerDay: 1000 } }),
        ),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(2);
    expect(await balance(project.id)).toBe(4);
  });

  /** PostgreSQL round trips of `call`: every query a pg client sends (BEGIN and COMMIT included). */
  const roundTrips = async (call: () => Promise<unknown>): Promise<number> => {
    const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const original = proto.query;
    let count = 0;
    proto.query = function (this: unknown, ...args: unknown[]) {
      count += 1;
      return original.apply(this, args);
    };
    try {
      await call();
    } finally {
      proto.query = original;
    }
    return count;
  };

  it('admits in one PostgreSQL round trip (the figures of docs/performance.md)', async () => {
    const { project } = await fixtures.project({ credits: 20 });
    const inApi = admission(project.id, project.createdAt);
    const api = await roundTrips(() => metering.admitRequest(inApi));
    const pickup = await roundTrips(() => metering.pickUp(inApi));
    const inWorkflow = await roundTrips(() =>
      metering.admit({ requestId: randomUUID(), projectId: project.id, credits: 3, monthlyQuota: 100 }),
    );
    process.stdout.write(
      `admission round trips: api ${api}, pickup in the workflow ${pickup}; admission in the workflow (before) ${inWorkflow}\n`,
    );
    expect(api).toBe(1);
  });
});
