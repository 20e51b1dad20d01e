import { Logger } from '@nestjs/common';
import type { Kafka, Producer } from 'kafkajs';
import type { DataSource } from 'typeorm';
import { outboxPublished } from '#libs/observability';
import type { PgListener } from '#libs/persistence';
import { OUTBOX_CHANNEL } from './event-store.js';

const BATCH = 200;
/** The relay also polls, so a lost notification delays an event by at most this. */
const POLL_MS = 1000;
/** How long a wake-up waits for more rows before publishing: a relay publishes at most about 10
 * batches a second, so an event reaches Kafka within about 0.1 s of its commit. Each batch costs
 * a relay transaction, a Kafka produce, and a fetch and a transaction in each projection; with
 * 5 ms, every request's admission and stop were a batch each, and that work, running beside the
 * next request, made one client's requests 7 ms slower (docs/performance.md, session 6). */
const LINGER_MS = 100;
const MAX_BACKOFF_MS = 5000;

/** The advisory lock a batch is published under (any constant; the relays' one shared lock). */
const PUBLISH_LOCK = 7_460_203_911;

/**
 * The relay's producer: one try per send, no retry inside kafkajs, acks from all in-sync replicas
 * (sendBatch's acks: -1), one request in flight. kafkajs 2.2.4's sendMessages keeps the brokers'
 * answers across its internal retries and, on a retry, sends only to brokers that have none: a
 * partition whose leadership moved to a broker that had already answered for its own partitions
 * is never sent, and send() resolves (kafkajs pull request #1798, open). Under a killed broker
 * that lost 15 of 108 usage events that the relay had marked published (docs/reliability-history.md,
 * "Usage events lost when a Kafka broker dies"). With no internal retry, any failed partition fails the
 * send, and the relay's loop sends the whole batch again: a partition that had been written gets
 * its rows twice (consumers drop copies by CloudEvent id), never none. kafkajs refuses an
 * idempotent producer without retries, so the producer is not idempotent; the order of a key's
 * events holds because the relay sends one batch at a time, in outbox order, and a resend repeats
 * the batch from its first row.
 */
const RELAY_PRODUCER_CONFIG = { idempotent: false, maxInFlightRequests: 1, retry: { retries: 0 } } as const;

/**
 * Publishes outbox rows to Kafka (RELAY_PRODUCER_CONFIG: one try, acks from all replicas) and
 * marks them sent only once the send resolved; a failed send leaves the batch unpublished and the
 * loop sends it again. Several relays can run, one publishing at a time: a batch is the oldest
 * unpublished rows, taken under a transaction-scoped advisory lock, so a batch goes out only
 * after the one before it was sent and marked, and two relays never reorder a stream's events
 * (rows of a stream are queued in its order: its appends are serialised by the stream's row). A
 * relay that
 * finds the lock taken waits for its next wake-up; one that dies releases it with its connection.
 * While Kafka is down, rows stay in the outbox and go out when it returns. It is woken by the
 * outbox's notifications on the process's one listener (libs/persistence PgListener), and polls
 * besides, so a lost notification or a dropped listener delays an event by at most POLL_MS.
 */
export class OutboxRelay {
  private readonly logger = new Logger('outbox');
  private producer: Producer | undefined;
  private unlisten: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;

  constructor(
    private readonly db: DataSource,
    private readonly kafka: Kafka,
    private readonly listener: PgListener,
  ) {}

  async start(): Promise<void> {
    this.producer = this.kafka.producer({ ...RELAY_PRODUCER_CONFIG, retry: { ...RELAY_PRODUCER_CONFIG.retry } });
    // Listening again after a drop wakes it too: rows committed meanwhile go out at once.
    this.unlisten = this.listener.subscribe(OUTBOX_CHANNEL, {
      notify: () => this.wake?.(),
      up: () => this.wake?.(),
      down: () => undefined,
    });
    await this.listener
      .start()
      .catch((e: unknown) =>
        this.logger.warn(
          `not listening on ${OUTBOX_CHANNEL} yet (polling): ${e instanceof Error ? e.message : String(e)}`,
        ),
      );
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.running;
    await this.producer?.disconnect().catch(() => undefined);
    this.unlisten?.();
  }

  /** Publishes one batch; returns how many rows it sent. */
  async publishBatch(): Promise<number> {
    const producer = this.producer;
    if (!producer) throw new Error('relay not started');
    return this.db.transaction(async (tx) => {
      // The lock and the batch in one round trip: no rows when another relay is publishing.
      const rows: { id: string; topic: string; key: string; payload: unknown }[] = await tx.query(
        `select id, topic, key, payload from outbox where published_at is null and pg_try_advisory_xact_lock($2) order by id limit $1`,
        [BATCH, PUBLISH_LOCK],
      );
      if (rows.length === 0) return 0;
      const byTopic = new Map<string, { key: string; value: string; headers: Record<string, string> }[]>();
      for (const row of rows) {
        const messages = byTopic.get(row.topic) ?? [];
        messages.push({
          key: row.key,
          value: JSON.stringify(row.payload),
          headers: { 'content-type': 'application/cloudevents+json' },
        });
        byTopic.set(row.topic, messages);
      }
      await producer.sendBatch({
        acks: -1,
        topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
      });
      await tx.query(`update outbox set published_at = now() where id = any($1::bigint[])`, [rows.map((r) => r.id)]);
      for (const [topic, messages] of byTopic) outboxPublished.inc({ topic }, messages.length);
      return rows.length;
    });
  }

  private async loop(): Promise<void> {
    let backoff = 100;
    let connected = false;
    while (!this.stopped) {
      const woken = new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      try {
        if (!connected) {
          await this.producer!.connect();
          connected = true;
        }
        const sent = await this.publishBatch();
        backoff = 100;
        if (sent === BATCH) continue;
      } catch (e) {
        this.logger.warn(`publishing failed, retrying in ${backoff} ms: ${e instanceof Error ? e.message : String(e)}`);
        await sleep(backoff);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
        continue;
      }
      await Promise.race([woken, sleep(POLL_MS)]);
      // The transactions committing after the one that woke us go in the same batch.
      await sleep(LINGER_MS);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
