import type { EntityManager } from 'typeorm';
import { TOPICS, type EventMetadata, type EventType, type StoredEvent } from '#libs/contracts';
import { toCloudEvent, type CloudEvent } from './cloud-event.js';

/** The stream already moved past the expected version: another writer appended first. */
export class ConcurrencyError extends Error {
  constructor(
    readonly streamId: string,
    readonly expectedVersion: number,
  ) {
    super(`stream ${streamId} is not at version ${expectedVersion}`);
    this.name = 'ConcurrencyError';
  }
}

export interface NewEvent {
  /** Deterministic for idempotent appends (see deterministicUuid). */
  readonly eventId: string;
  readonly type: EventType;
  readonly data: Record<string, unknown>;
  readonly metadata: EventMetadata;
}

/** Postgres channel the relay listens on for new outbox rows (notified by the outbox's insert
 * trigger, migration 1763700000019). */
export const OUTBOX_CHANNEL = 'mas_outbox';

const UNIQUE_VIOLATION = '23505';

const isUniqueViolation = (e: unknown): boolean => (e as { code?: string }).code === UNIQUE_VIOLATION;

/** The outbox row of one message (the placeholders given); a message queued twice is kept once.
 * One text for `append` (with its event) and `enqueue`. */
const queueMessage = (p: { eventId: string; topic: string; key: string; payload: string; from?: string }): string =>
  `insert into outbox (event_id, topic, key, payload) ${p.from ? 'select ' : 'values ('}${p.eventId}, ${p.topic}, ${p.key}, ${p.payload}${p.from ? ` from ${p.from}` : ')'} on conflict (event_id, topic) do nothing`;

/** The statement that moves a stream's version row by the group's size ($2) unless one of the
 * group's ids ($3) is stored already, returning the version after the move (no row when nothing
 * moved: stored already, or not at the expected version). $10 is the project (of a stream that may
 * be new) or the expected version. */
function advance(expected: number | 'any'): string {
  const fresh = `not exists (select 1 from events where event_id = any($3::uuid[]))`;
  if (expected === 'any')
    return `insert into streams (stream_id, version, project_id) select $1, $2, $10 where ${fresh}
            on conflict (stream_id) do update set version = streams.version + excluded.version returning version`;
  // A stream another writer created first is left alone (do nothing), and the caller is told.
  if (expected === 0)
    return `insert into streams (stream_id, version, project_id) select $1, $2, $10 where ${fresh}
            on conflict (stream_id) do nothing returning version`;
  return `update streams set version = version + $2 where stream_id = $1 and version = $10::int and ${fresh} returning version`;
}

/** Append-only event store with a transactional outbox. Every method takes the caller's
 * transaction, so the state change, its events and their outbox rows commit together. */
export class EventStore {
  /**
   * Appends to a stream. `expectedVersion` is the version the caller read (0 for a new stream): the
   * stream's row in `streams` moves from it with a conditional update (a new stream's row is
   * inserted), and a writer that lost the race gets a ConcurrencyError. 'any' appends after
   * whatever is there: the stream row's update locks it, so concurrent appenders queue on it
   * instead of reading a maximum. A group whose events are stored already is skipped (the stream
   * moves only when none of its ids is in the store), so a retried step appends once.
   * One round trip, whatever the group's size: the stream's move, the events and their outbox rows
   * are one statement (the relay's wake-up is the outbox's insert trigger).
   */
  async append(
    tx: EntityManager,
    streamId: string,
    expectedVersion: number | 'any',
    events: readonly NewEvent[],
  ): Promise<StoredEvent[]> {
    if (events.length === 0) return [];
    const ids = events.map((e) => e.eventId);
    // Recorded at the appender's clock, to the millisecond, so that the stored event and the
    // CloudEvent queued with it carry the same time. The CloudEvent's streamversion is added by the
    // statement, which is where the version is known.
    const recordedAt = new Date();
    const payloads = events.map((e) =>
      JSON.stringify(
        toCloudEvent({
          id: e.eventId,
          type: e.type,
          subject: streamId,
          time: recordedAt,
          data: e.data,
          projectId: e.metadata.projectId,
          correlationId: e.metadata.correlationId,
          causationId: e.metadata.causationId,
        }),
      ),
    );
    let rows: { version: number }[];
    try {
      rows = await tx.query(
        `with moved as (${advance(expectedVersion)}),
              grp as (
                select e.event_id, e.type, e.data, e.metadata, e.payload, moved.version - $2 + e.ord::int as version
                  from moved, unnest($3::uuid[], $4::text[], $5::jsonb[], $6::jsonb[], $7::jsonb[]) with ordinality
                       as e(event_id, type, data, metadata, payload, ord)),
              appended as (
                insert into events (event_id, stream_id, version, type, data, metadata, recorded_at)
                select event_id, $1, version, type, data, metadata, $8 from grp order by version),
              queued as (
                ${queueMessage({ eventId: 'event_id', topic: '$9', key: '$1', payload: "payload || jsonb_build_object('streamversion', version)", from: 'grp order by version' })})
         select version from moved`,
        [
          streamId,
          events.length,
          ids,
          events.map((e) => e.type),
          events.map((e) => JSON.stringify(e.data)),
          events.map((e) => JSON.stringify(e.metadata)),
          payloads,
          recordedAt,
          TOPICS.events,
          expectedVersion === 'any' || expectedVersion === 0 ? events[0]!.metadata.projectId : expectedVersion,
        ],
      );
    } catch (e) {
      if (isUniqueViolation(e) && /stream_id/.test((e as { detail?: string }).detail ?? ''))
        throw new ConcurrencyError(streamId, expectedVersion === 'any' ? -1 : expectedVersion);
      throw e;
    }
    const after = rows[0]?.version;
    if (after === undefined) {
      // Nothing moved: the group was stored by an earlier attempt, or another writer moved the
      // stream (only a stream with an expected version can be moved by another writer).
      if (expectedVersion === 'any') return [];
      const existing: unknown[] = await tx.query(`select 1 from events where event_id = any($1::uuid[])`, [ids]);
      if (existing.length > 0) return [];
      throw new ConcurrencyError(streamId, expectedVersion);
    }
    const before = after - events.length;
    return events.map((e, i) => ({
      eventId: e.eventId,
      streamId,
      version: before + i + 1,
      type: e.type,
      data: e.data,
      metadata: e.metadata,
      recordedAt: recordedAt.toISOString(),
    }));
  }

  /** The stream's current version (0 for a stream with no events). */
  async version(tx: EntityManager, streamId: string): Promise<number> {
    const rows: { version: number }[] = await tx.query(`select version from streams where stream_id = $1`, [streamId]);
    return rows[0]?.version ?? 0;
  }

  /** Queues a message for Kafka in the caller's transaction; the relay publishes it after commit. */
  async enqueue(tx: EntityManager, topic: string, key: string, eventId: string, payload: CloudEvent): Promise<void> {
    await tx.query(queueMessage({ eventId: '$1', topic: '$2', key: '$3', payload: '$4' }), [
      eventId,
      topic,
      key,
      JSON.stringify(payload),
    ]);
  }

  /** The stream's events after `afterVersion` (all of them by default), in order. */
  async readStream(tx: EntityManager, streamId: string, afterVersion = 0): Promise<StoredEvent[]> {
    const rows: {
      event_id: string;
      stream_id: string;
      version: number;
      type: EventType;
      data: Record<string, unknown>;
      metadata: EventMetadata;
      recorded_at: Date;
    }[] = await tx.query(
      `select event_id, stream_id, version, type, data, metadata, recorded_at from events where stream_id = $1 and version > $2 order by version`,
      [streamId, afterVersion],
    );
    return rows.map((r) => ({
      eventId: r.event_id,
      streamId: r.stream_id,
      version: r.version,
      type: r.type,
      data: r.data,
      metadata: r.metadata,
      recordedAt: r.recorded_at.toISOString(),
    }));
  }
}
