import { Logger } from '@nestjs/common';
import type { Consumer, Kafka } from 'kafkajs';
import type { DataSource } from 'typeorm';
import { isUuid } from '#libs/contracts';
import type { CloudEvent } from '#libs/events';
import type { Projection } from './projections/projection.js';

/** A message's CloudEvent, or undefined for one that is not JSON or lacks its id or type. */
export function parseCloudEvent(value: Buffer | null): CloudEvent<Record<string, unknown>> | undefined {
  if (!value) return undefined;
  try {
    const event = JSON.parse(value.toString('utf8')) as Partial<CloudEvent<Record<string, unknown>>> | null;
    if (!event || typeof event !== 'object' || typeof event.id !== 'string' || !isUuid(event.id) || typeof event.type !== 'string') return undefined;
    return event as CloudEvent<Record<string, unknown>>;
  } catch {
    return undefined;
  }
}

/** Runs projections as Kafka consumer groups (`<prefix>-projector-<name>`), each event applied once. */
export class ProjectionRunner {
  private readonly logger = new Logger('projector');
  private readonly consumers: Consumer[] = [];

  constructor(
    private readonly db: DataSource,
    private readonly kafka: Kafka,
    private readonly projections: readonly Projection[],
    private readonly groupPrefix = 'mas',
  ) {}

  /** Starts every projection; `groupSuffix` gives a fresh group that reads from offset 0. */
  async start(groupSuffix = ''): Promise<void> {
    for (const projection of this.projections) {
      const consumer = this.kafka.consumer({ groupId: `${this.groupPrefix}-projector-${projection.name}${groupSuffix}`, allowAutoTopicCreation: false });
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
            else this.logger.error(`projection ${projection.name}: skipped a message that is not a CloudEvent with an id and a type (${batch.topic}/${batch.partition}@${message.offset})`);
          }
          if (events.length > 0) await this.apply(projection, events);
        },
      });
      this.consumers.push(consumer);
      this.logger.log(`projection ${projection.name} consuming ${projection.topic}`);
    }
  }

  /** Applies one event in one transaction with its processed-event row; a second delivery is a no-op. */
  async handle(projection: Projection, event: CloudEvent<Record<string, unknown>>): Promise<boolean> {
    return (await this.apply(projection, [event])) === 1;
  }

  /** Applies events in order in one transaction, each with its processed-event row (an event
   * delivered before is skipped); returns how many were new. */
  async apply(projection: Projection, events: readonly CloudEvent<Record<string, unknown>>[]): Promise<number> {
    return this.db.transaction(async (tx) => {
      let applied = 0;
      for (const event of events) {
        const fresh: unknown[] = await tx.query(
          `insert into projection_processed (projection, event_id) values ($1, $2) on conflict do nothing returning 1`,
          [projection.name, event.id],
        );
        if (fresh.length === 0) continue;
        await projection.apply(tx, event);
        applied++;
      }
      return applied;
    });
  }

  async stop(): Promise<void> {
    await Promise.all(this.consumers.map((c) => c.disconnect()));
    this.consumers.length = 0;
  }
}
