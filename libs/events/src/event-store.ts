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

/** Append-only event store with a transactional outbox. Every method takes the caller's
 * transaction, so the state change, its events and their outbox rows commit together. */
export class EventStore {
  /**
   * Appends to a stream. `expectedVersion` is the version the caller read (0 for a new stream),
   * or 'any' when the caller already serialises writers (e.g. under a row lock). Events whose id
   * is already stored are skipped, so a retried step appends once.
   */
  async append(tx: EntityManager, streamId: string, expectedVersion: number | 'any', events: readonly NewEvent[]): Promise<StoredEvent[]> {
    const ids = events.map((e) => e.eventId);
    const existing: { event_id: string }[] = ids.length ? await tx.query(`select event_id from events where event_id = any($1::uuid[])`, [ids]) : [];
    const seen = new Set(existing.map((r) => r.event_id));
    const fresh = events.filter((e) => !seen.has(e.eventId));
    if (fresh.length === 0) return [];
    let version = expectedVersion;
    if (version === 'any') {
      const rows: { v: number | null }[] = await tx.query(`select max(version) as v from events where stream_id = $1`, [streamId]);
      version = rows[0]?.v ?? 0;
    }
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
      if ((e as { code?: string }).code === UNIQUE_VIOLATION && /stream_id/.test((e as { detail?: string }).detail ?? '')) {
        throw new ConcurrencyError(streamId, version);
      }
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
      }));
    }
    return stored;
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

  async readStream(tx: EntityManager, streamId: string): Promise<StoredEvent[]> {
    const rows: { event_id: string; stream_id: string; version: number; type: EventType; data: Record<string, unknown>; metadata: EventMetadata; recorded_at: Date }[] = await tx.query(
      `select event_id, stream_id, version, type, data, metadata, recorded_at from events where stream_id = $1 order by version`,
      [streamId],
    );
    return rows.map((r) => ({ eventId: r.event_id, streamId: r.stream_id, version: r.version, type: r.type, data: r.data, metadata: r.metadata, recordedAt: r.recorded_at.toISOString() }));
  }
}
