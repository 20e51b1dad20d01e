import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { DataSource, EntityManager } from 'typeorm';
import type { EventMetadata } from '#libs/contracts';
import { toCloudEvent, type CloudEvent, type DomainEvent } from '#libs/events';
import { parseCloudEvent } from './projection-runner.js';
import type { EventStoreRebuild, Projection, TableNames } from './projections/projection.js';

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
 * keeps serving the current ones, and the new tables then take the live ones' names.
 *
 * From the event store (`rebuildFromEvents`): only the streams with an event in the read model's
 * retention window are read, each folded whole and written in bulk, and the rows retention would
 * prune are dropped, so the rebuild costs what the window holds, not the whole history, and brings
 * no pruned row back. The events the live projector applied meanwhile (its processed marks since
 * the rebuild began) are applied to the new tables in rounds without any lock (the folds skip an
 * event at or below a row's version, so applying one twice changes nothing), and the lock on the
 * live tables is held only for the last round and the renames.
 *
 * From Kafka: in one transaction holding the live tables' lock (the projector's writes wait, reads
 * go on), the events the live projector applied meanwhile are applied to the new tables too, the
 * events only the rebuild applied are marked processed (so the projector does not apply them
 * twice), and the new tables take the live ones' names.
 */
export async function rebuildProjection(
  db: DataSource,
  projection: Projection,
  source: RebuildSource,
  kafka?: Kafka,
): Promise<{ applied: number; caughtUp: number }> {
  if (source === 'events' && !projection.rebuild)
    throw new Error(
      `projection ${projection.name} is built from ${projection.topic}, which is not in the event store: rebuild it from kafka`,
    );
  const tables: TableNames = Object.fromEntries(projection.tables.map((t) => [t, `${t}_rebuild`]));
  await db.transaction(async (tx) => {
    for (const t of projection.tables) {
      await tx.query(`drop table if exists ${tables[t]}`);
      await tx.query(`create table ${tables[t]} (like ${t} including all)`);
    }
    await tx.query(`delete from projection_rebuild_applied where projection = $1`, [projection.name]);
  });
  if (source === 'events') return rebuildFromEvents(db, projection, projection.rebuild!, tables);
  const applyIn = async (tx: EntityManager, event: CloudEvent<Record<string, unknown>>): Promise<void> => {
    if (!projection.accepts(event)) return;
    const fresh: unknown[] = await tx.query(
      `insert into projection_rebuild_applied (projection, event_id) values ($1, $2) on conflict do nothing returning 1`,
      [projection.name, event.id],
    );
    if (fresh.length) await projection.apply(tx, event, tables);
  };
  const apply = (event: CloudEvent<Record<string, unknown>>): Promise<void> =>
    db.transaction((tx) => applyIn(tx, event));
  if (!kafka) throw new Error('a rebuild from kafka needs a Kafka client');
  const applied = await fromKafka(kafka, projection.topic, apply);
  const caughtUp = await db.transaction((tx) => swap(tx, projection, tables));
  return { applied, caughtUp };
}

/** Events whose positions a rebuild pages through at a time, and catch-up rounds before the lock. */
const PAGE = 5000;
const ROUNDS = 5;
/** A catch-up round reads the marks from this long before the previous round began: a projector
 * transaction that began before it and committed after it is read again (harmless, see above). */
const OVERLAP = "interval '10 seconds'";

const domainOf = (r: EventRow): DomainEvent => ({
  id: r.event_id,
  type: r.type,
  streamId: r.stream_id,
  version: r.version,
  projectId: r.metadata.projectId,
  time: r.recorded_at.toISOString(),
  data: r.data,
});

async function rebuildFromEvents(
  db: DataSource,
  projection: Projection,
  how: EventStoreRebuild,
  tables: TableNames,
): Promise<{ applied: number; caughtUp: number }> {
  const table = tables[how.table]!;
  // The live projector's applications from here on are caught up below; before it, each event it
  // applied was committed before the streams are read, so they are in what is read.
  const [{ since }] = (await db.query(`select now() as since`)) as [{ since: Date }];
  const seen = new Set<string>();
  let applied = 0;
  for (let after = await positionBefore(db, how.windowDays + 1); ;) {
    const page: { position: string; stream_id: string }[] = await db.query(
      `select position, stream_id from events where position > $1 order by position limit $2`,
      [after, PAGE],
    );
    const fresh = [...new Set(page.map((r) => r.stream_id))].filter(
      (id) => id.startsWith(how.streamPrefix) && !seen.has(id),
    );
    if (fresh.length) {
      for (const id of fresh) seen.add(id);
      const events: EventRow[] = await db.query(
        `select position, event_id, stream_id, version, type, data, metadata, recorded_at from events where stream_id = any($1::text[]) order by stream_id, version`,
        [fresh],
      );
      const rows: Record<string, unknown>[] = [];
      for (let i = 0; i < events.length;) {
        let j = i;
        while (j < events.length && events[j]!.stream_id === events[i]!.stream_id) j++;
        const row = how.row(events.slice(i, j).map(domainOf));
        if (row) rows.push(row);
        i = j;
      }
      if (rows.length)
        await db.query(`insert into ${table} select * from json_populate_recordset(null::${table}, $1::json)`, [
          JSON.stringify(rows),
        ]);
      applied += events.length;
    }
    if (page.length < PAGE) break;
    after = page.at(-1)!.position;
  }
  await db.query(`delete from ${table} where ${how.expired}`);
  let caughtUp = 0;
  let mark = since;
  for (let round = 0; round < ROUNDS; round++) {
    const [{ next }] = (await db.query(`select now() - ${OVERLAP} as next`)) as [{ next: Date }];
    const n = await db.transaction((tx) => catchUp(tx, projection, tables, mark));
    caughtUp += n;
    mark = next;
    if (n < PAGE / 50) break;
  }
  caughtUp += await db.transaction(async (tx) => {
    // EXCLUSIVE: the live projector's writes wait here, the api's reads do not; for the last
    // round and the renames only.
    for (const t of projection.tables) await tx.query(`lock table ${t} in exclusive mode`);
    const n = await catchUp(tx, projection, tables, mark);
    await rename(tx, projection, tables);
    return n;
  });
  return { applied, caughtUp };
}

/** Applies to the new tables the events the live projector applied since `since`; how many. */
async function catchUp(tx: EntityManager, projection: Projection, tables: TableNames, since: Date): Promise<number> {
  const events: EventRow[] = await tx.query(
    `select e.position, e.event_id, e.stream_id, e.version, e.type, e.data, e.metadata, e.recorded_at
       from projection_processed p join events e on e.event_id = p.event_id
      where p.projection = $1 and p.processed_at >= $2 order by e.position`,
    [projection.name, since],
  );
  for (const e of events) await projection.apply(tx, asCloudEvent(e), tables);
  return events.length;
}

/** The position from which the events are at most `days` old (positions follow the time events
 * are recorded): a binary search on the primary key. */
async function positionBefore(db: DataSource, days: number): Promise<string> {
  const [bounds] = (await db.query(`select min(position) as lo, max(position) as hi from events`)) as [
    { lo: string | null; hi: string | null },
  ];
  if (bounds.lo === null || bounds.hi === null) return '0';
  let [lo, hi] = [BigInt(bounds.lo), BigInt(bounds.hi) + 1n];
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    const rows: { position: string; recent: boolean }[] = await db.query(
      `select position, recorded_at >= now() - make_interval(days => $2) as recent from events where position >= $1 order by position limit 1`,
      [mid.toString(), days],
    );
    if (!rows[0] || rows[0].recent) hi = mid;
    else lo = BigInt(rows[0].position) + 1n;
  }
  return (lo - 1n).toString();
}

/** Reads `topic` from offset 0 up to the end it had when the rebuild began, applying each event. */
async function fromKafka(
  kafka: Kafka,
  topic: string,
  apply: (e: CloudEvent<Record<string, unknown>>) => Promise<void>,
): Promise<number> {
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

/** The swap of a rebuild from Kafka, in the caller's transaction; the number of live-only events
 * applied to the new tables. */
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
      ? (
          (await tx.query(
            `select position, event_id, stream_id, version, type, data, metadata, recorded_at from events where event_id = any($1::uuid[]) order by position`,
            [ids],
          )) as EventRow[]
        ).map(asCloudEvent)
      : (
          (await tx.query(`select payload from outbox where topic = $1 and event_id = any($2::uuid[]) order by id`, [
            projection.topic,
            ids,
          ])) as { payload: CloudEvent<Record<string, unknown>> }[]
        ).map((r) => r.payload);
    for (const e of events) await projection.apply(tx, e, tables);
    caughtUp = events.length;
  }
  await tx.query(
    `insert into projection_processed (projection, event_id) select projection, event_id from projection_rebuild_applied where projection = $1 on conflict do nothing`,
    [projection.name],
  );
  await tx.query(`delete from projection_rebuild_applied where projection = $1`, [projection.name]);
  await rename(tx, projection, tables);
  return caughtUp;
}

/** The new tables take the live ones' names, and their indexes the live ones' index names (which
 * the migrations, the plans and docs name); the old tables are dropped. */
async function rename(tx: EntityManager, projection: Projection, tables: TableNames): Promise<void> {
  // An index's definition without its name and table, to pair the copies `like ... including all` made.
  const shape = (alias: string) =>
    `regexp_replace(${alias}.indexdef, '^CREATE (UNIQUE )?INDEX \\S+ ON \\S+', 'CREATE \\1INDEX')`;
  for (const t of projection.tables) {
    await tx.query(`alter table ${t} rename to ${t}_old`);
    await tx.query(`alter table ${tables[t]} rename to ${t}`);
    const names: { old_name: string; new_name: string }[] = await tx.query(
      `select o.indexname as old_name, n.indexname as new_name from pg_indexes o
         join pg_indexes n on n.schemaname = o.schemaname and n.tablename = $2 and ${shape('n')} = ${shape('o')}
        where o.schemaname = current_schema() and o.tablename = $1`,
      [`${t}_old`, t],
    );
    await tx.query(`drop table ${t}_old`);
    for (const { old_name, new_name } of names)
      if (old_name !== new_name) await tx.query(`alter index ${new_name} rename to ${old_name}`);
  }
}
