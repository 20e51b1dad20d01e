import { randomUUID } from 'node:crypto';
import type { Client, Connection } from '@temporalio/client';
import {
  agentRequestWorkflowId,
  EVENT_TYPES,
  ledgerReconcilerScheduleId,
  sessionWorkflowId,
  type ReconcilerReport,
} from '#libs/contracts';
import { EventStore } from '#libs/events';
import { MeteringService } from '#libs/metering';
import { eventually } from '../support/eventually.js';
import { request } from '../support/http.js';
import { e2eStack } from '../support/e2e-stack.js';
import { connectTemporal } from '../support/temporal.js';

/** Money and session slots held by a workflow that closed without giving them back (terminated by
 * an operator, timed out) are released by the reconciler, over the real stack. */
describe('the ledger reconciler', () => {
  // This worker creates the schedule on its task queue, as every deployment's worker does.
  const stack = e2eStack({ name: 'reconciler', workerEnv: { RECONCILER_INTERVAL_SECONDS: '3600' } });
  const taskQueue = stack.env.TEMPORAL_TASK_QUEUE!;
  let connection: Connection;
  let temporal: Client;

  beforeAll(async () => {
    ({ connection, client: temporal } = await connectTemporal(stack.config));
  });
  afterAll(async () => {
    await temporal.schedule
      .getHandle(ledgerReconcilerScheduleId(taskQueue))
      .delete()
      .catch(() => undefined);
    await connection.close();
  });

  const reconcile = (): Promise<ReconcilerReport> =>
    temporal.workflow.execute('ledgerReconcilerWorkflow', {
      taskQueue,
      workflowId: `ledger-reconciler-test-${randomUUID()}`,
      args: [{ graceSeconds: 0 }],
    });

  it('runs as a Temporal Schedule that operators can see', async () => {
    const description = await temporal.schedule.getHandle(ledgerReconcilerScheduleId(taskQueue)).describe();
    expect(description.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'ledgerReconcilerWorkflow',
      taskQueue,
    });
  });

  it('releases the reservation of a request whose workflow was terminated mid-run, once', async () => {
    const { project, auth } = await stack.fixtures.project({
      credits: 20,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' },
    });
    stack.models.reply({ content: 'too late', delayMs: 5_000 });
    const answer = request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'hello', capabilities: ['chat', 'code'] },
    });
    const requestId = await eventually(async () => {
      // Taken up by its workflow (the api admits it before the workflow starts).
      const rows: { request_id: string }[] = await stack.fixtures.db.query(
        `select request_id from credit_ledger where project_id = $1 and kind = 'reserve' and picked_up_at is not null`,
        [project.id],
      );
      if (!rows[0]) throw new Error('not taken up yet');
      return rows[0].request_id;
    });
    expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(17);
    // An operator terminates the run: no clean-up code of the workflow runs.
    await temporal.workflow.getHandle(agentRequestWorkflowId(requestId)).terminate('operator drill');
    expect((await answer).status).toBeGreaterThanOrEqual(500);
    expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(17);

    const report = await reconcile();
    expect(report.reservationsReleased).toBeGreaterThanOrEqual(1);
    expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(20);
    const settle: { credits: number; reason: string }[] = await stack.fixtures.db.query(
      `select credits, reason from credit_ledger where request_id = $1 and kind = 'settle'`,
      [requestId],
    );
    expect(settle).toEqual([{ credits: 0, reason: 'reconciled' }]);
    const events: { type: string }[] = await stack.fixtures.db.query(
      `select type from events where stream_id = $1 and type = $2`,
      [`project-${project.id}`, EVENT_TYPES.ledgerReconciled],
    );
    expect(events).toHaveLength(1);

    // A second pass finds nothing more to release for it.
    await reconcile();
    expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(20);
    expect(
      await stack.fixtures.db.query(`select 1 from credit_ledger where request_id = $1 and kind = 'settle'`, [
        requestId,
      ]),
    ).toHaveLength(1);
  });

  it('releases a reservation the api made whose workflow never started, once its pickup deadline passed, and leaves one not yet due alone', async () => {
    const { project } = await stack.fixtures.project({ credits: 20 });
    // Admitted as the api admits, with no workflow started on purpose (an api that died right after
    // admitting, or a start that never reached Temporal).
    const metering = new MeteringService(stack.fixtures.db, new EventStore());
    const admission = (pickupBy: Date) => ({
      requestId: randomUUID(),
      projectId: project.id,
      credits: 3,
      monthlyQuota: 100,
      pickupBy,
      inputBytes: 0,
      caps: { runsInFlight: 10, inputBytesPerDay: 1000 },
    });
    const missed = admission(new Date(Date.now() - 1000));
    const due = admission(new Date(Date.now() + 10 * 60_000));
    for (const a of [missed, due]) expect(await metering.admitRequest(a)).toMatchObject({ ok: true });
    expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(14);

    await reconcile();
    expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(17);
    const settled: { request_id: string; reason: string }[] = await stack.fixtures.db.query(
      `select request_id, reason from credit_ledger where project_id = $1 and kind = 'settle'`,
      [project.id],
    );
    expect(settled).toEqual([{ request_id: missed.requestId, reason: 'reconciled' }]);
    // A workflow that starts after the release runs nothing and reserves nothing again.
    expect(await metering.pickUp(missed)).toMatchObject({ ok: false, error: { code: 'compute_unavailable' } });
    expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(17);
  });

  it('leaves the reservation of a running request alone', async () => {
    const { project, auth } = await stack.fixtures.project({
      credits: 20,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' },
    });
    stack.models.reply({ content: 'slow answer', delayMs: 3_000 });
    const answer = request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'hello', capabilities: ['chat'] },
    });
    await eventually(async () => {
      const rows: unknown[] = await stack.fixtures.db.query(
        `select 1 from credit_ledger where project_id = $1 and kind = 'reserve'`,
        [project.id],
      );
      if (!rows.length) throw new Error('not admitted yet');
    });
    await reconcile();
    const done = await answer;
    expect(done.status).toBe(200);
    expect(done.body.usage).toMatchObject({ credits_this_request: 1, credits_remaining: 19 });
    expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(19);
  });

  it('frees the slot of a session whose workflow was terminated', async () => {
    const { auth } = await stack.fixtures.project({ credits: 20 });
    const created = await request(stack.api.url, 'POST', '/v1/sessions', { headers: auth });
    expect(created.status).toBe(200);
    await temporal.workflow.getHandle(sessionWorkflowId(created.body.id)).terminate('operator drill');
    expect(
      (await request(stack.api.url, 'GET', `/v1/sessions/${created.body.id}`, { headers: auth })).body.status,
    ).toBe('active');
    const report = await reconcile();
    expect(report.sessionsFreed).toBeGreaterThanOrEqual(1);
    expect(
      (await request(stack.api.url, 'GET', `/v1/sessions/${created.body.id}`, { headers: auth })).body.status,
    ).toBe('ended');
  });
});
