import { randomUUID } from 'node:crypto';
import { DEFAULT_CAPABILITY_SURCHARGES, EVENT_TYPES, TOPICS, type StopRecord } from '#libs/contracts';
import { EventStore } from '#libs/events';
import { testConfig } from '../../../test/support/config.js';
import { Fixtures } from '../../../test/support/fixtures.js';
import { MeteringService } from './metering.service.js';

const config = testConfig();

/** The money path against the real PostgreSQL: ledger, balance, events and outbox rows. */
describe('MeteringService', () => {
  let fixtures: Fixtures;
  let metering: MeteringService;
  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    metering = new MeteringService(fixtures.db, new EventStore());
  });
  afterAll(async () => {
    await fixtures.close();
  });

  const stop = (requestId: string, projectId: string, patch: Partial<StopRecord> = {}): StopRecord => ({
    requestId,
    projectId,
    plan: 'pro',
    stop: 1,
    status: 'completed',
    capabilitiesUsed: ['chat', 'code'],
    surcharges: DEFAULT_CAPABILITY_SURCHARGES,
    inputTokens: 10,
    outputTokens: 5,
    ...patch,
  });
  const balance = async (projectId: string) => (await fixtures.accounts.findProject(projectId)).creditBalance;
  const usageRows = async (requestId: string) =>
    (await fixtures.db.query(`select payload from outbox where topic = $1 and payload->'data'->>'request_id' = $2`, [
      TOPICS.usage,
      requestId,
    ])) as { payload: { data: { credits: number; input_tokens: number } } }[];

  it('settles at the first stop with its usage event carrying the settled amount, once however often it is retried', async () => {
    const { project } = await fixtures.project({ credits: 20 });
    const requestId = randomUUID();
    expect(await metering.admit({ requestId, projectId: project.id, credits: 6, monthlyQuota: 100 })).toMatchObject({
      ok: true,
      balance: 14,
    });
    const first = await metering.recordStop(stop(requestId, project.id));
    expect(first).toEqual({ creditsThisRequest: 3, creditsRemaining: 17 });
    // A retried activity (the first attempt committed but its answer was lost) answers the same.
    expect(await metering.recordStop(stop(requestId, project.id))).toMatchObject({
      ...first,
      recorded: { status: 'completed' },
    });
    expect(await balance(project.id)).toBe(17);
    const usage = await usageRows(requestId);
    expect(usage.map((u) => u.payload.data.credits)).toEqual([3]);
    // A later stop (a continuation) charges nothing and reports its tokens.
    expect(
      await metering.recordStop(stop(requestId, project.id, { stop: 2, inputTokens: 7, outputTokens: 0 })),
    ).toEqual({ creditsThisRequest: 0, creditsRemaining: 17 });
    expect((await usageRows(requestId)).map((u) => [u.payload.data.credits, u.payload.data.input_tokens])).toEqual(
      expect.arrayContaining([
        [3, 10],
        [0, 7],
      ]),
    );
  });

  /** The stop events and views of a request's stop `n`. */
  const recordedStops = async (requestId: string, n: number) => ({
    events: (await fixtures.db.query(
      `select type from events where stream_id = $1 and (data->>'stop')::int = $2 and type like 'agent-request.%' and type <> $3`,
      [`agent-request-${requestId}`, n, EVENT_TYPES.agentRequestToolOutputsSubmitted],
    )) as { type: string }[],
    views: (await fixtures.db.query(`select view from request_views where request_id = $1 and stop = $2`, [
      requestId,
      n,
    ])) as { view: { message?: string } }[],
  });

  it('records a stop once: a re-run that brings another outcome (failed after completed) records nothing and is answered the first', async () => {
    const { project } = await fixtures.project({ credits: 20 });
    const requestId = randomUUID();
    await metering.admit({ requestId, projectId: project.id, credits: 6, monthlyQuota: 100 });
    const first = await metering.recordStop(stop(requestId, project.id, { view: { message: 'the answer' } }));
    expect(first).toEqual({ creditsThisRequest: 3, creditsRemaining: 17 });
    // The workflow task is retried past the pickup deadline (or a cancellation raced it): its
    // re-run computes another outcome for the same stop.
    const again = await metering.recordStop(
      stop(requestId, project.id, {
        status: 'failed',
        errorCode: 'compute_unavailable',
        capabilitiesUsed: [],
        inputTokens: 0,
        outputTokens: 0,
        view: { error: { code: 'compute_unavailable', message: 'late' } },
      }),
    );
    expect(again).toEqual({
      creditsThisRequest: 3,
      creditsRemaining: 17,
      recorded: {
        status: 'completed',
        capabilitiesUsed: ['chat', 'code'],
        tokensUsed: 15,
        view: { message: 'the answer' },
      },
    });
    const recorded = await recordedStops(requestId, 1);
    expect(recorded.events.map((e) => e.type)).toEqual([EVENT_TYPES.agentRequestCompleted]);
    expect(recorded.views.map((v) => v.view)).toEqual([{ message: 'the answer' }]);
    expect(await balance(project.id)).toBe(17);
    expect((await usageRows(requestId)).map((u) => u.payload.data.credits)).toEqual([3]);
  });

  it('records a stop once the other way round: completed after failed is answered failed, and charges nothing', async () => {
    const { project } = await fixtures.project({ credits: 20 });
    const requestId = randomUUID();
    await metering.admit({ requestId, projectId: project.id, credits: 6, monthlyQuota: 100 });
    const failed = stop(requestId, project.id, {
      status: 'failed',
      errorCode: 'compute_error',
      capabilitiesUsed: [],
      inputTokens: 0,
      outputTokens: 0,
      view: { error: { code: 'compute_error', message: 'no' } },
    });
    expect(await metering.recordStop(failed)).toEqual({ creditsThisRequest: 0, creditsRemaining: 20 });
    const again = await metering.recordStop(stop(requestId, project.id, { view: { message: 'for free?' } }));
    expect(again).toEqual({
      creditsThisRequest: 0,
      creditsRemaining: 20,
      recorded: {
        status: 'failed',
        capabilitiesUsed: [],
        tokensUsed: 0,
        view: { error: { code: 'compute_error', message: 'no' } },
      },
    });
    expect((await recordedStops(requestId, 1)).events.map((e) => e.type)).toEqual([EVENT_TYPES.agentRequestFailed]);
    expect(await balance(project.id)).toBe(20);
    expect(await usageRows(requestId)).toEqual([]);
  });

  it('refuses at admission a request first taken up after its pickup deadline, and admits one re-run after it that was admitted in time', async () => {
    const { project } = await fixtures.project({ credits: 20 });
    const late = randomUUID();
    expect(
      await metering.admit({
        requestId: late,
        projectId: project.id,
        credits: 6,
        monthlyQuota: 100,
        acceptBy: Date.now() - 1,
      }),
    ).toMatchObject({ ok: false, error: { code: 'compute_unavailable' } });
    expect(await metering.isAdmitted(late)).toBe(false);
    const inTime = randomUUID();
    expect(
      await metering.admit({
        requestId: inTime,
        projectId: project.id,
        credits: 6,
        monthlyQuota: 100,
        acceptBy: Date.now() + 60_000,
      }),
    ).toMatchObject({ ok: true, balance: 14 });
    expect(
      await metering.admit({
        requestId: inTime,
        projectId: project.id,
        credits: 6,
        monthlyQuota: 100,
        acceptBy: Date.now() - 1,
      }),
    ).toMatchObject({ ok: true, balance: 14 });
    expect(await balance(project.id)).toBe(14);
  });

  it('rolls the billing period over on the day the project was created, not on a start a short month clamped (issue 28)', async () => {
    const { project } = await fixtures.project({ credits: 20 });
    // Created on January 31st; its second period began on February 28th (clamped), and the period
    // has ended since.
    await fixtures.db.query(
      `update projects set created_at = '2026-01-31T09:30:00Z', period_start = '2026-02-28T00:00:00Z', requests_used = 7 where id = $1`,
      [project.id],
    );
    expect(
      await metering.admit({ requestId: randomUUID(), projectId: project.id, credits: 1, monthlyQuota: 100 }),
    ).toMatchObject({ ok: true, requestsUsed: 1 });
    // The latest "31st, or the month's last day" at or before now.
    const now = new Date();
    let y = now.getUTCFullYear();
    let m = now.getUTCMonth();
    const startIn = (year: number, month: number) =>
      new Date(Date.UTC(year, month, Math.min(31, new Date(Date.UTC(year, month + 1, 0)).getUTCDate())));
    while (startIn(y, m) > now) [y, m] = m === 0 ? [y - 1, 11] : [y, m - 1];
    const [row] = (await fixtures.db.query(`select period_start from projects where id = $1`, [project.id])) as [
      { period_start: Date },
    ];
    expect(row.period_start.toISOString()).toBe(startIn(y, m).toISOString());
  });

  it('charges nothing for a failed run and gives the whole reservation back', async () => {
    const { project } = await fixtures.project({ credits: 20 });
    const requestId = randomUUID();
    await metering.admit({ requestId, projectId: project.id, credits: 6, monthlyQuota: 100 });
    expect(
      await metering.recordStop(stop(requestId, project.id, { status: 'failed', errorCode: 'compute_error' })),
    ).toEqual({ creditsThisRequest: 0, creditsRemaining: 20 });
    expect((await usageRows(requestId)).map((u) => u.payload.data.credits)).toEqual([0]);
  });

  it('charges a cancelled run by what ran: 1 + the surcharges used once the model answered, else nothing', async () => {
    const { project } = await fixtures.project({ credits: 20 });
    const answered = randomUUID();
    await metering.admit({ requestId: answered, projectId: project.id, credits: 6, monthlyQuota: 100 });
    expect(await metering.recordStop(stop(answered, project.id, { status: 'cancelled' }))).toEqual({
      creditsThisRequest: 3,
      creditsRemaining: 17,
    });
    const unanswered = randomUUID();
    await metering.admit({ requestId: unanswered, projectId: project.id, credits: 6, monthlyQuota: 100 });
    expect(
      await metering.recordStop(
        stop(unanswered, project.id, { status: 'cancelled', capabilitiesUsed: [], inputTokens: 0, outputTokens: 0 }),
      ),
    ).toEqual({ creditsThisRequest: 0, creditsRemaining: 17 });
    expect((await usageRows(answered)).map((u) => u.payload.data.credits)).toEqual([3]);
    // Nothing ran and nothing was charged: no usage event.
    expect(await usageRows(unanswered)).toEqual([]);
  });

  it('releases an unsettled reservation once, and records a reconciliation', async () => {
    const { project } = await fixtures.project({ credits: 20 });
    const requestId = randomUUID();
    await metering.admit({ requestId, projectId: project.id, credits: 6, monthlyQuota: 100 });
    expect(await metering.openReservations(new Date(Date.now() + 1000), 10_000)).toEqual(
      expect.arrayContaining([expect.objectContaining({ requestId, credits: 6 })]),
    );
    expect(
      await Promise.all(
        [1, 2, 3].map(() => metering.release({ requestId, projectId: project.id, reason: 'reconciled' })),
      ),
    ).toEqual(expect.arrayContaining([true, false, false]));
    expect(await balance(project.id)).toBe(20);
    expect(
      (await metering.openReservations(new Date(Date.now() + 1000), 10_000)).map((r) => r.requestId),
    ).not.toContain(requestId);
    const events: { type: string }[] = await fixtures.db.query(`select type from events where stream_id = $1`, [
      `project-${project.id}`,
    ]);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining([EVENT_TYPES.ledgerReconciled]));
    // A stop after the release (a workflow that was thought gone) charges nothing more.
    expect(await metering.recordStop(stop(requestId, project.id))).toEqual({
      creditsThisRequest: 0,
      creditsRemaining: 20,
    });
  });

  it('settles once when attempts of a stop race each other and a release of the same request', async () => {
    // Each step waits for the project lock, then reads the ledger as the previous holder left it.
    for (let round = 0; round < 5; round++) {
      const { project } = await fixtures.project({ credits: 20 });
      const requestId = randomUUID();
      await metering.admit({ requestId, projectId: project.id, credits: 6, monthlyQuota: 100 });
      await Promise.all([
        metering.recordStop(stop(requestId, project.id)),
        metering.recordStop(stop(requestId, project.id)),
        metering.release({ requestId, projectId: project.id, reason: 'release' }),
      ]);
      const settlements: { credits: number }[] = await fixtures.db.query(
        `select credits from credit_ledger where request_id = $1 and kind = 'settle'`,
        [requestId],
      );
      expect(settlements).toHaveLength(1);
      expect(await balance(project.id)).toBe(20 - settlements[0]!.credits);
      // One stop, one usage event (its tokens count even when the release settled first), carrying what was settled.
      expect((await usageRows(requestId)).map((u) => u.payload.data.credits)).toEqual([settlements[0]!.credits]);
    }
  });

  it('never lets concurrent admissions overdraw the balance', async () => {
    const { project } = await fixtures.project({ credits: 10 });
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        metering.admit({ requestId: randomUUID(), projectId: project.id, credits: 3, monthlyQuota: 100 }),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(3);
    expect(await balance(project.id)).toBe(1);
  });
});
