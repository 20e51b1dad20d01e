import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { EVENT_TYPES, webhookWorkflowId } from '#libs/contracts';
import type { DomainEvent } from '#libs/events';
import { testConfig } from '../../../test/support/config.js';
import { Fixtures } from '../../../test/support/fixtures.js';
import { connectTemporal } from '../../../test/support/temporal.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WEBHOOK_DELIVERY_RETENTION_DAYS, WebhookStore } from './webhook-store.js';

// Issue 28: after a consumer-offset reset (a new group, or an operator's reset to the earliest
// offset) the dispatcher read the topic from its beginning, and an event whose delivery had been
// deleted past its 30 days of retention found no row to say it was sent: its webhook went out
// again. Over the real PostgreSQL and Temporal (no worker polls the task queue: the workflows only
// wait, and are terminated at the end).

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
    // Never started: dispatch() alone needs no Kafka.
    dispatcher = new WebhookDispatcher(
      {} as Kafka,
      temporal.client,
      store,
      { render: async () => ({ id: 'x' }) },
      {
        groupId: `${config.kafkaGroupPrefix}-unused`,
        taskQueue: `dispatch-test-${randomUUID()}`,
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
