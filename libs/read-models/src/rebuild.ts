import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { DataSource, EntityManager } from 'typeorm';
import type { EventMetadata } from '#libs/contracts';
import { toCloudEvent, type CloudEvent } from '#libs/events';
import { parseCloudEvent } from './projection-runner.js';
import type { Projection, TableNames } from './projections/projection.js';

export type RebuildSource = 'kafka' | 'events';

interface EventRow {
  position: string;
  event_id: string;
  stream_id: string;
  version: number;
  type: string;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  recorded_at: Date;
}

const BATCH = 500;

const asCloudEvent = (r: EventRow): CloudEvent<Record<string, unknown>> =>
  toCloudEvent({
    id: r.event_id,
    type: r.type,
    subject: r.stream_id,
    time: r.recorded_at,
    data: r.data,
    projectId: r.metadata.projectId,
    correlationId: r.metadata.correlationId,
    causationId: r.metadata.causationId,
    streamVersion: r.version,
  });

/**
 * Rebuilds a projection without stopping it: its events are applied, from Kafka offset 0 or from
 * the event store, into new versions of its tables (`<table>_rebuild`) while the live projector
 * keeps serving the current ones. Then, in one transaction holding the live tables' lock (the
 * projector's writes wait, reads go on): the events the live projector applied meanwhile are
 * applied to the new tables too, the events only the rebuild applied are marked processed (so the
 * projector does not apply them twice), and the new tables take the live ones' names.
 */
export async function rebuildProjection(db: DataSource, projection: Projection, source: RebuildSource, kafka?: Kafka): Promise<{ applied: number; caughtUp: number }> {
  if (source === 'events' && !projection.fromEventStore) throw new Error(`projection ${projection.name} is built from ${projection.topic}, which is not in the event store: rebuild it from kafka`);
  const tables: TableNames = Object.fromEntries(projection.tables.map((t) => [t, `${t}_rebuild`]));
  await db.transaction(async (tx) => {
    for (const t of projection.tables) {
      await tx.query(`drop table if exists ${tables[t]}`);
      await tx.query(`create table ${tables[t]} (like ${t} including all)`);
    }
    await tx.query(`delete from projection_rebuild_applied where projection = $1`, [projection.name]);
  });
  const applyIn = async (tx: EntityManager, event: CloudEvent<Record<string, unknown>>): Promise<void> => {
    if (!projection.accepts(event)) return;
    const fresh: unknown[] = await tx.query(`insert into projection_rebuild_applied (projection, event_id) values ($1, $2) on conflict do nothing returning 1`, [projection.name, event.id]);
    if (fresh.length) await projection.apply(tx, event, tables);
  };
  const apply = (event: CloudEvent<Record<string, unknown>>): Promise<void> => db.transaction((tx) => applyIn(tx, event));
  let applied = 0;
  if (source === 'events') {
    for (let after = '0'; ; ) {
      const rows: EventRow[] = await db.query(`select position, event_id, stream_id, version, type, data, metadata, recorded_at from events where position > $1 order by position limit $2`, [after, BATCH]);
      await db.transaction(async (tx) => {
        for (const r of rows) await applyIn(tx, asCloudEvent(r));
      });
      applied += rows.length;
      if (rows.length < BATCH) break;
      after = rows.at(-1)!.position;
    }
  } else {
    if (!kafka) throw new Error('a rebuild from kafka needs a Kafka client');
    applied = await fromKafka(kafka, projection.topic, apply);
  }
  const caughtUp = await db.transaction((tx) => swap(tx, projection, tables));
  return { applied, caughtUp };
}

/** Reads `topic` from offset 0 up to the end it had when the rebuild began, applying each event. */
async function fromKafka(kafka: Kafka, topic: string, apply: (e: CloudEvent<Record<string, unknown>>) => Promise<void>): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, BigInt(p.high)]));
  await admin.disconnect();
  const pending = new Set([...ends].filter(([, high]) => high > 0n).map(([p]) => p));
  if (pending.size === 0) return 0;
  const consumer = kafka.consumer({ groupId: `mas-rebuild-${randomUUID()}`, allowAutoTopicCreation: false });
  let applied = 0;
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    const done = new Promise<void>((resolve, reject) => {
      consumer
        .run({
          eachMessage: async ({ partition, message }) => {
            if (!pending.has(partition)) return;
            const event = parseCloudEvent(message.value);
            if (event) {
              await apply(event);
              applied += 1;
            }
            if (BigInt(message.offset) + 1n >= ends.get(partition)!) {
              pending.delete(partition);
              if (pending.size === 0) resolve();
            }
          },
        })
        .catch(reject);
    });
    await done;
  } finally {
    await consumer.disconnect();
  }
  return applied;
}

/** The swap, in the caller's transaction; the number of live-only events applied to the new tables. */
async function swap(tx: EntityManager, projection: Projection, tables: TableNames): Promise<number> {
  // EXCLUSIVE: the live projector's writes wait here, the api's reads do not.
  for (const t of projection.tables) await tx.query(`lock table ${t} in exclusive mode`);
  const missed: { event_id: string }[] = await tx.query(
    `select p.event_id from projection_processed p
      where p.projection = $1 and not exists (select 1 from projection_rebuild_applied a where a.projection = p.projection and a.event_id = p.event_id)`,
    [projection.name],
  );
  const ids = missed.map((m) => m.event_id);
  let caughtUp = 0;
  if (ids.length) {
    const events: CloudEvent<Record<string, unknown>>[] = projection.fromEventStore
      ? ((await tx.query(`select position, event_id, stream_id, version, type, data, metadata, recorded_at from events where event_id = any($1::uuid[]) order by position`, [ids])) as EventRow[]).map(asCloudEvent)
      : ((await tx.query(`select payload from outbox where topic = $1 and event_id = any($2::uuid[]) order by id`, [projection.topic, ids])) as { payload: CloudEvent<Record<string, unknown>> }[]).map((r) => r.payload);
    for (const e of events) await projection.apply(tx, e, tables);
    caughtUp = events.length;
  }
  await tx.query(
    `insert into projection_processed (projection, event_id) select projection, event_id from projection_rebuild_applied where projection = $1 on conflict do nothing`,
    [projection.name],
  );
  await tx.query(`delete from projection_rebuild_applied where projection = $1`, [projection.name]);
  for (const t of projection.tables) {
    await tx.query(`alter table ${t} rename to ${t}_old`);
    await tx.query(`alter table ${tables[t]} rename to ${t}`);
    await tx.query(`drop table ${t}_old`);
  }
  return caughtUp;
}
