import { Logger } from '@nestjs/common';
import type { Admin, Consumer, Kafka } from 'kafkajs';
import type { DataSource } from 'typeorm';
import { isUuid } from '#libs/contracts';
import type { CloudEvent } from '#libs/events';
import { projectorEvents, projectorLag } from '#libs/observability';
import type { Projection } from './projections/projection.js';

/** A message's CloudEvent, or undefined for one that is not JSON or lacks its id or type. */
export function parseCloudEvent(value: Buffer | null): CloudEvent<Record<string, unknown>> | undefined {
  if (!value) return undefined;
  try {
    const event = JSON.parse(value.toString('utf8')) as Partial<CloudEvent<Record<string, unknown>>> | null;
    if (
      !event ||
      typeof event !== 'object' ||
      typeof event.id !== 'string' ||
      !isUuid(event.id) ||
      typeof event.type !== 'string'
    )
      return undefined;
    return event as CloudEvent<Record<string, unknown>>;
  } catch {
    return undefined;
  }
}

/** Runs projections as Kafka consumer groups (`<prefix>-projector-<name>`), each event applied once. */
export class ProjectionRunner {
  private readonly logger = new Logger('projector');
  private readonly consumers: Consumer[] = [];
  private readonly groups: { groupId: string; topic: string }[] = [];
  private admin: Promise<Admin> | undefined;

  constructor(
    private readonly db: DataSource,
    private readonly kafka: Kafka,
    private readonly projections: readonly Projection[],
    private readonly groupPrefix = 'mas',
  ) {}

  /** Starts every projection; `groupSuffix` gives a fresh group that reads from offset 0. */
  async start(groupSuffix = ''): Promise<void> {
    for (const projection of this.projections) {
      const groupId = `${this.groupPrefix}-projector-${projection.name}${groupSuffix}`;
      const consumer = this.kafka.consumer({ groupId, allowAutoTopicCreation: false });
      await consumer.connect();
      await consumer.subscribe({ topic: projection.topic, fromBeginning: true });
      await consumer.run({
        // A fetched batch is applied in one transaction (under load one commit for many events).
        eachBatch: async ({ batch }) => {
          const events: CloudEvent<Record<string, unknown>>[] = [];
          for (const message of batch.messages) {
            const event = parseCloudEvent(message.value);
            // It can never be applied: retrying it would stall the projection for good.
            if (event) events.push(event);
            else
              this.logger.error(
                `projection ${projection.name}: skipped a message that is not a CloudEvent with an id and a type (${batch.topic}/${batch.partition}@${message.offset})`,
              );
          }
          if (events.length > 0) await this.apply(projection, events);
        },
      });
      this.consumers.push(consumer);
      this.groups.push({ groupId, topic: projection.topic });
      this.logger.log(`projection ${projection.name} consuming ${projection.topic}`);
    }
  }

  /** Applies one event in one transaction with its processed-event row; a second delivery is a no-op. */
  async handle(projection: Projection, event: CloudEvent<Record<string, unknown>>): Promise<boolean> {
    return (await this.apply(projection, [event])) === 1;
  }

  /** Applies the events it accepts in order in one transaction, each with its processed-event row
   * (an event delivered before is skipped); returns how many were new. */
  async apply(projection: Projection, events: readonly CloudEvent<Record<string, unknown>>[]): Promise<number> {
    const accepted = events.filter((e) => projection.accepts(e));
    if (accepted.length < events.length)
      projectorEvents.inc({ projection: projection.name, result: 'other' }, events.length - accepted.length);
    if (accepted.length === 0) return 0;
    const applied = await this.db.transaction(async (tx) => {
      let fresh = 0;
      for (const event of accepted) {
        const inserted: unknown[] = await tx.query(
          `insert into projection_processed (projection, event_id) values ($1, $2) on conflict do nothing returning 1`,
          [projection.name, event.id],
        );
        if (inserted.length === 0) continue;
        await projection.apply(tx, event);
        fresh++;
      }
      return fresh;
    });
    projectorEvents.inc({ projection: projection.name, result: 'applied' }, applied);
    projectorEvents.inc({ projection: projection.name, result: 'duplicate' }, accepted.length - applied);
    return applied;
  }

  /** Sets each consumer group's lag (the topic's end offsets minus the group's committed ones,
   * summed over partitions; a partition without a commit counts from its first offset). */
  async readLag(): Promise<void> {
    this.admin ??= (async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      return admin;
    })().catch((e: unknown) => {
      this.admin = undefined;
      throw e;
    });
    try {
      const admin = await this.admin;
      await Promise.all(
        this.groups.map(async ({ groupId, topic }) => {
          const [committed, ends] = await Promise.all([
            admin.fetchOffsets({ groupId, topics: [topic] }),
            admin.fetchTopicOffsets(topic),
          ]);
          const at = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
          const lag = ends.reduce(
            (sum, p) => sum + Number(p.high) - Math.max(at.get(p.partition) ?? -1, Number(p.low)),
            0,
          );
          projectorLag.set({ group: groupId, topic }, lag);
        }),
      );
    } catch (e) {
      // Kafka cannot be read: no series rather than a stale number (a gap on the dashboard).
      projectorLag.reset();
      throw e;
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.consumers.map((c) => c.disconnect()));
    this.consumers.length = 0;
    this.groups.length = 0;
    const admin = this.admin;
    this.admin = undefined;
    await admin?.then((a) => a.disconnect()).catch(() => undefined);
  }
}
