import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@nestjs/common';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import type { Consumer, Kafka } from 'kafkajs';
import { isUuid, SEARCH_ATTRIBUTES, TOPICS, webhookWorkflowId, type WebhookDeliveryInput } from '#libs/contracts';
import { fromCloudEvent, type CloudEvent, type DomainEvent } from '#libs/events';
import { webhookEventOf } from './webhook-events.js';
import { WEBHOOK_DELIVERY_RETENTION_DAYS, type WebhookStore } from './webhook-store.js';

/** Renders the resource a webhook event carries (as GET shows it), at the event's version. */
export interface WebhookResources {
  render(event: DomainEvent): Promise<unknown>;
}

export interface DispatcherOptions {
  /** Consumer group (`<KAFKA_GROUP_PREFIX>-webhooks`). */
  readonly groupId: string;
  /** Where the delivery workflows run. */
  readonly taskQueue: string;
  readonly retry: Omit<WebhookDeliveryInput, 'deliveryId'>;
  /** How often resends waiting for their workflow are looked for (default 2000 ms). */
  readonly resendPollMs?: number;
}

const WEBHOOK_DELIVERY_RETENTION_MS = WEBHOOK_DELIVERY_RETENTION_DAYS * 24 * 60 * 60 * 1000;

/** How often the dispatcher looks for resends (one indexed query that usually finds no row). */
const RESEND_POLL_MS = 2000;

/**
 * Turns domain events (mas.events.v1) into webhook deliveries: for each endpoint of the event's
 * project that takes it, a `webhook_deliveries` row with a deterministic id (event id +
 * endpoint id) and the body fixed, then the workflow `webhook-<delivery id>`. Redelivery of the
 * event (Kafka is at least once) finds the rows; a delivery still pending is started again and
 * Temporal refuses the duplicate id (running or closed: REJECT_DUPLICATE), so nothing is sent
 * twice. The offset is committed only after the workflows are started, so a crash in between
 * dispatches the event again.
 *
 * It also starts the workflows of resends (a delivery sent again from the console, which never
 * talks to Temporal): rows that `WebhookStore.resend` wrote with `awaiting_start`, found by a poll
 * every `resendPollMs`; a row is marked started only after Temporal took (or already had) its
 * workflow, so a crash in between starts it at the next poll, and the duplicate is refused.
 */
export class WebhookDispatcher {
  private readonly logger = new Logger('webhooks');
  private consumer: Consumer | undefined;
  private stopped = false;
  private readonly stopping = new AbortController();
  private starting: Promise<void> | undefined;
  private resending: Promise<void> | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly temporal: Client,
    private readonly store: WebhookStore,
    private readonly resources: WebhookResources,
    private readonly options: DispatcherOptions,
  ) {}

  /** Starts consuming in the background; a Kafka that is down is retried until stop(). */
  start(): void {
    this.starting = this.run();
    this.resending = this.resendLoop();
  }

  private async resendLoop(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.startResends();
      } catch (e) {
        this.logger.warn(`could not start webhook resends (retrying): ${e instanceof Error ? e.message : String(e)}`);
      }
      await sleep(this.options.resendPollMs ?? RESEND_POLL_MS, undefined, { signal: this.stopping.signal }).catch(
        () => undefined,
      );
    }
  }

  /** Starts the workflow of every resend waiting for one; the number started. */
  async startResends(): Promise<number> {
    let started = 0;
    for (const resend of await this.store.resendsAwaitingStart()) {
      if (this.stopped) break;
      if (await this.startDelivery(resend.id, resend.projectId)) started += 1;
      await this.store.markStarted(resend.id);
    }
    return started;
  }

  private async run(): Promise<void> {
    for (let delay = 1000; !this.stopped; delay = Math.min(delay * 2, 30_000)) {
      const consumer = this.kafka.consumer({
        groupId: this.options.groupId,
        allowAutoTopicCreation: false,
        // stop() waits for the fetch in flight, which on a quiet topic waits this long for data:
        // kafkajs's default (5 s) made every worker's shutdown 5 s longer. One fetch a second
        // when idle costs the broker nothing measurable.
        maxWaitTimeInMs: 1000,
      });
      try {
        await consumer.connect();
        await consumer.subscribe({ topic: TOPICS.events, fromBeginning: true });
        if (this.stopped) throw new Error('stopped');
        this.consumer = consumer;
        await consumer.run({
          eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
            const events = batch.messages.map((m) => ({ offset: m.offset, event: parseDomainEvent(m.value) }));
            // One query a batch finds the projects that have endpoints at all, so catching up on
            // a long topic (a new consumer group reads from offset 0) costs little.
            const candidates = [
              ...new Set(events.flatMap(({ event }) => (event && webhookEventOf(event.type) ? [event.projectId] : []))),
            ];
            const subscribed = new Set(candidates.length ? await this.store.projectsWithEndpoints(candidates) : []);
            for (const { offset, event } of events) {
              if (!isRunning() || isStale()) break;
              if (event && subscribed.has(event.projectId)) await this.dispatch(event);
              resolveOffset(offset);
              await heartbeat();
            }
          },
        });
        return;
      } catch (e) {
        await consumer.disconnect().catch(() => undefined);
        if (this.stopped) return;
        this.logger.warn(
          `webhook dispatcher could not join ${this.options.groupId} (retrying in ${delay} ms): ${e instanceof Error ? e.message : String(e)}`,
        );
        await sleep(delay, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    await this.starting;
    await this.resending;
    await this.consumer?.disconnect();
  }

  /** Dispatches one domain event; safe to call any number of times for the same event. An event
   * older than the deliveries' retention is not dispatched: its delivery row, the record that it
   * was sent, may be gone, and only a re-read of the topic (an offset reset, a new consumer group)
   * brings such an event here. */
  async dispatch(event: DomainEvent): Promise<number> {
    const type = webhookEventOf(event.type);
    if (!type) return 0;
    if (Date.parse(event.time) < Date.now() - WEBHOOK_DELIVERY_RETENTION_MS) return 0;
    const subscribers = await this.store.subscribersOf(event.projectId, type, new Date(event.time));
    if (subscribers.length === 0) return 0;
    const data = await this.resources.render(event);
    if (data === undefined) {
      this.logger.warn(`no resource for ${event.type} ${event.id}: no webhook sent`);
      return 0;
    }
    const body = JSON.stringify({ type, timestamp: event.time, data });
    const deliveries = await this.store.createDeliveries(
      { id: event.id, type, projectId: event.projectId },
      subscribers,
      body,
    );
    let started = 0;
    for (const delivery of deliveries) {
      if (delivery.status !== 'pending') continue;
      if (await this.startDelivery(delivery.id, event.projectId)) started += 1;
    }
    return started;
  }

  /** Starts `webhook-<delivery id>`; false when it was started before (running or closed). */
  private async startDelivery(deliveryId: string, projectId: string): Promise<boolean> {
    try {
      await this.temporal.workflow.start('webhookDeliveryWorkflow', {
        workflowId: webhookWorkflowId(deliveryId),
        taskQueue: this.options.taskQueue,
        args: [{ deliveryId, ...this.options.retry } satisfies WebhookDeliveryInput],
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.projectId, value: projectId }],
      });
      return true;
    } catch (e) {
      if (!(e instanceof WorkflowExecutionAlreadyStartedError)) throw e;
      return false;
    }
  }
}

/** The domain event a message of mas.events.v1 carries; undefined for anything else. */
function parseDomainEvent(value: Buffer | null): DomainEvent | undefined {
  if (!value) return undefined;
  try {
    const event = JSON.parse(value.toString('utf8')) as CloudEvent<Record<string, unknown>> | null;
    if (
      !event ||
      typeof event !== 'object' ||
      typeof event.id !== 'string' ||
      !isUuid(event.id) ||
      typeof event.type !== 'string'
    )
      return undefined;
    const domain = fromCloudEvent(event);
    return domain && typeof domain.projectId === 'string' && isUuid(domain.projectId) ? domain : undefined;
  } catch {
    return undefined;
  }
}
