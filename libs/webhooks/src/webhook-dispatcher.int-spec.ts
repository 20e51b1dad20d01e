import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { Kafka } from 'kafkajs';
import { EVENT_TYPES, webhookWorkflowId } from '#libs/contracts';
import type { DomainEvent } from '#libs/events';
import { testConfig } from '../../../test/support/config.js';
import { Fixtures } from '../../../test/support/fixtures.js';
import { connectTemporal } from '../../../test/support/temporal.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WEBHOOK_DELIVERY_RETENTION_DAYS, WebhookStore } from './webhook-store.js';

// The webhook dispatcher over the real PostgreSQL and Temporal. A resend (the console's "Resend",
// docs/console.md): the store writes the new delivery awaiting its workflow, the dispatcher starts
// it, and a dispatcher that crashed after starting it but before marking it started starts nothing
// twice. An old event (issue 28): after a consumer-offset reset (a new group, or an operator's reset
// to the earliest offset) the dispatcher read the topic from its beginning, and an event whose
// delivery had been deleted past its 30 days of retention found no row to say it was sent: its
// webhook went out again. No worker polls this file's task queue, so the workflows only wait, and
// are terminated at the end.

const config = testConfig();

const DAY_MS = 24 * 60 * 60 * 1000;

describe('the webhook dispatcher', () => {
  let fixtures: Fixtures;
  let temporal: Awaited<ReturnType<typeof connectTemporal>>;
  let store: WebhookStore;
  let dispatcher: WebhookDispatcher;
  const started: string[] = [];

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    temporal = await connectTemporal(config);
    store = new WebhookStore(fixtures.db, config);
    // Never started: dispatch() and startResends() alone need no Kafka.
    dispatcher = new WebhookDispatcher(
      {} as Kafka,
      temporal.client,
      store,
      { render: async () => ({}) },
      {
        groupId: `${config.kafkaGroupPrefix}-unused`,
        taskQueue: `dispatcher-test-${randomUUID()}`,
        retry: { initialIntervalMs: 1000, maximumIntervalMs: 1000, retryForMs: 60_000, attemptTimeoutMs: 1000 },
      },
    );
  });
  afterAll(async () => {
    for (const id of started)
      await temporal.client.workflow
        .getHandle(webhookWorkflowId(id))
        .terminate('test over')
        .catch(() => undefined);
    await temporal.connection.close();
    await fixtures.close();
  });

  /** A project with an endpoint and one finished delivery to it. */
  async function finishedDelivery(): Promise<{ projectId: string; endpointId: string; deliveryId: string }> {
    const { project } = await fixtures.project();
    const { subscription } = await store.add(project.id, { url: 'https://receiver.example.com/hook' });
    const [delivery] = await store.createDeliveries(
      { id: randomUUID(), type: 'agent.completed', projectId: project.id },
      [subscription.id],
      '{"type":"agent.completed"}',
    );
    await store.markFailed(delivery!.id);
    return { projectId: project.id, endpointId: subscription.id, deliveryId: delivery!.id };
  }

  const awaiting = async (id: string): Promise<boolean> =>
    (
      (await fixtures.db.query(`select awaiting_start from webhook_deliveries where id = $1`, [id])) as {
        awaiting_start: boolean;
      }[]
    )[0]!.awaiting_start;

  it("starts the resend's workflow once, even when the dispatcher stopped between starting it and marking it started", async () => {
    const { projectId, deliveryId } = await finishedDelivery();
    const { id } = await store.resend(projectId, deliveryId);
    started.push(id);
    expect(id).not.toBe(deliveryId);
    expect(await awaiting(id)).toBe(true);
    const [resent] = (await store.deliveries(projectId)).filter((d) => d.id === id);
    expect(resent).toMatchObject({ status: 'pending', resendOf: deliveryId, attempts: [] });
    expect((await store.target(id))?.body).toBe('{"type":"agent.completed"}');

    const handle = temporal.client.workflow.getHandle(webhookWorkflowId(id));
    await expect(handle.describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
    expect(await dispatcher.startResends()).toBeGreaterThanOrEqual(1);
    expect(await awaiting(id)).toBe(false);
    const first = await handle.describe();
    expect(first.status.name).toBe('RUNNING');

    // As if the dispatcher had died after the start and before clearing the flag.
    await fixtures.db.query(`update webhook_deliveries set awaiting_start = true where id = $1`, [id]);
    await dispatcher.startResends();
    expect(await awaiting(id)).toBe(false);
    expect((await handle.describe()).runId).toBe(first.runId);
  });

  it('refuses a delivery of another project, one still pending, and one whose endpoint was removed', async () => {
    const a = await finishedDelivery();
    const b = await finishedDelivery();
    await expect(store.resend(a.projectId, b.deliveryId)).rejects.toThrow(/no webhook delivery/);
    const pending = await store.createDeliveries(
      { id: randomUUID(), type: 'agent.failed', projectId: a.projectId },
      [a.endpointId],
      '{}',
    );
    await expect(store.resend(a.projectId, pending[0]!.id)).rejects.toThrow(/still being attempted/);
    await store.remove(a.projectId, a.endpointId);
    await expect(store.resend(a.projectId, a.deliveryId)).rejects.toThrow(/endpoint of this delivery was removed/);
    expect(
      (
        await fixtures.db.query(`select count(*)::int as n from webhook_deliveries where resend_of in ($1, $2)`, [
          a.deliveryId,
          b.deliveryId,
        ])
      )[0].n,
    ).toBe(0);
  });

  const completed = (projectId: string, at: Date): DomainEvent => ({
    id: randomUUID(),
    type: EVENT_TYPES.agentRequestCompleted,
    streamId: `request-${randomUUID()}`,
    version: 3,
    projectId,
    time: at.toISOString(),
    data: {},
  });
  const deliveriesOf = async (eventId: string): Promise<{ id: string }[]> =>
    fixtures.db.query(`select id from webhook_deliveries where event_id = $1`, [eventId]);

  it('sends no webhook for an event older than the deliveries are kept, and sends one for a recent event', async () => {
    const { project } = await fixtures.project();
    const { subscription } = await store.add(project.id, { url: 'https://receiver.example.com/hook' });
    // The endpoint existed when both events happened.
    await fixtures.db.query(`update webhook_subscriptions set created_at = now() - interval '90 days' where id = $1`, [
      subscription.id,
    ]);

    const old = completed(project.id, new Date(Date.now() - (WEBHOOK_DELIVERY_RETENTION_DAYS + 1) * DAY_MS));
    expect(await dispatcher.dispatch(old)).toBe(0);
    expect(await deliveriesOf(old.id)).toEqual([]);

    const recent = completed(project.id, new Date(Date.now() - (WEBHOOK_DELIVERY_RETENTION_DAYS - 1) * DAY_MS));
    expect(await dispatcher.dispatch(recent)).toBe(1);
    const rows = await deliveriesOf(recent.id);
    expect(rows).toHaveLength(1);
    started.push(rows[0]!.id);
  });
});
