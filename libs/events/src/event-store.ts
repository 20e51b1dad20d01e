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

/** Postgres channel the relay listens on for new outbox rows. */
export const OUTBOX_CHANNEL = 'mas_outbox';

const UNIQUE_VIOLATION = '23505';

const isUniqueViolation = (e: unknown): boolean => (e as { code?: string }).code === UNIQUE_VIOLATION;

/** Append-only event store with a transactional outbox. Every method takes the caller's
 * transaction, so the state change, its events and their outbox rows commit together. */
export class EventStore {
  /**
   * Appends to a stream. `expectedVersion` is the version the caller read (0 for a new stream): the
   * stream's row in `streams` moves from it with a conditional update (a new stream's row is
   * inserted), and a writer that lost the race gets a ConcurrencyError. 'any' appends after
   * whatever is there: the stream row's update locks it, so concurrent appenders queue on it
   * instead of reading a maximum. Events whose id is already stored are skipped, so a retried step
   * appends once.
   */
  async append(tx: EntityManager, streamId: string, expectedVersion: number | 'any', events: readonly NewEvent[]): Promise<StoredEvent[]> {
    const ids = events.map((e) => e.eventId);
    const existing: { event_id: string }[] = ids.length ? await tx.query(`select event_id from events where event_id = any($1::uuid[])`, [ids]) : [];
    const seen = new Set(existing.map((r) => r.event_id));
    const fresh = events.filter((e) => !seen.has(e.eventId));
    if (fresh.length === 0) return [];
    const version = await this.advance(tx, streamId, expectedVersion, fresh.length, fresh[0]!.metadata.projectId);
    const stored: StoredEvent[] = [];
    try {
      for (const [i, e] of fresh.entries()) {
        const rows: { recorded_at: Date }[] = await tx.query(
          `insert into events (event_id, stream_id, version, type, data, metadata) values ($1, $2, $3, $4, $5, $6) returning recorded_at`,
          [e.eventId, streamId, version + i + 1, e.type, JSON.stringify(e.data), JSON.stringify(e.metadata)],
        );
        stored.push({ eventId: e.eventId, streamId, version: version + i + 1, type: e.type, data: e.data, metadata: e.metadata, recordedAt: rows[0]!.recorded_at.toISOString() });
      }
    } catch (e) {
      if (isUniqueViolation(e) && /stream_id/.test((e as { detail?: string }).detail ?? '')) throw new ConcurrencyError(streamId, version);
      throw e;
    }
    for (const event of stored) {
      await this.enqueue(tx, TOPICS.events, streamId, event.eventId, toCloudEvent({
        id: event.eventId,
        type: event.type,
        subject: streamId,
        time: new Date(event.recordedAt),
        data: event.data,
        projectId: event.metadata.projectId,
        correlationId: event.metadata.correlationId,
        causationId: event.metadata.causationId,
        streamVersion: event.version,
      }));
    }
    return stored;
  }

  /** Moves the stream's version row by `count`; the version before the move. */
  private async advance(tx: EntityManager, streamId: string, expected: number | 'any', count: number, projectId: string): Promise<number> {
    if (expected === 'any') {
      const rows: { version: number }[] = await tx.query(
        `insert into streams (stream_id, version, project_id) values ($1, $2, $3)
         on conflict (stream_id) do update set version = streams.version + excluded.version returning version`,
        [streamId, count, projectId],
      );
      return rows[0]!.version - count;
    }
    if (expected === 0) {
      // A savepoint keeps the caller's transaction usable when another writer created the stream first.
      try {
        await tx.query(`savepoint stream_create`);
        await tx.query(`insert into streams (stream_id, version, project_id) values ($1, $2, $3)`, [streamId, count, projectId]);
        await tx.query(`release savepoint stream_create`);
      } catch (e) {
        if (!isUniqueViolation(e)) throw e;
        await tx.query(`rollback to savepoint stream_create`);
        throw new ConcurrencyError(streamId, expected);
      }
      return 0;
    }
    const [rows] = (await tx.query(`update streams set version = version + $2 where stream_id = $1 and version = $3 returning version`, [streamId, count, expected])) as [unknown[], number];
    if (rows.length === 0) throw new ConcurrencyError(streamId, expected);
    return expected;
  }

  /** The stream's current version (0 for a stream with no events). */
  async version(tx: EntityManager, streamId: string): Promise<number> {
    const rows: { version: number }[] = await tx.query(`select version from streams where stream_id = $1`, [streamId]);
    return rows[0]?.version ?? 0;
  }

  /** Queues a message for Kafka in the caller's transaction; the relay publishes it after commit. */
  async enqueue(tx: EntityManager, topic: string, key: string, eventId: string, payload: CloudEvent): Promise<void> {
    await tx.query(`insert into outbox (event_id, topic, key, payload) values ($1, $2, $3, $4) on conflict (event_id, topic) do nothing`, [
      eventId,
      topic,
      key,
      JSON.stringify(payload),
    ]);
    await tx.query(`select pg_notify($1, '')`, [OUTBOX_CHANNEL]);
  }

  /** The stream's events after `afterVersion` (all of them by default), in order. */
  async readStream(tx: EntityManager, streamId: string, afterVersion = 0): Promise<StoredEvent[]> {
    const rows: { event_id: string; stream_id: string; version: number; type: EventType; data: Record<string, unknown>; metadata: EventMetadata; recorded_at: Date }[] = await tx.query(
      `select event_id, stream_id, version, type, data, metadata, recorded_at from events where stream_id = $1 and version > $2 order by version`,
      [streamId, afterVersion],
    );
    return rows.map((r) => ({ eventId: r.event_id, streamId: r.stream_id, version: r.version, type: r.type, data: r.data, metadata: r.metadata, recordedAt: r.recorded_at.toISOString() }));
  }
}
