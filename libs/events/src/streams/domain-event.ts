import type { StoredEvent } from '#libs/contracts';
import type { CloudEvent } from '../cloud-event.js';

/** What a fold needs of an event, whether read from the event store or from Kafka. */
export interface DomainEvent {
  readonly id: string;
  readonly type: string;
  readonly streamId: string;
  readonly version: number;
  readonly projectId: string;
  /** ISO-8601, when it was recorded. */
  readonly time: string;
  readonly data: Record<string, unknown>;
}

export const fromStored = (e: StoredEvent): DomainEvent => ({
  id: e.eventId,
  type: e.type,
  streamId: e.streamId,
  version: e.version,
  projectId: e.metadata.projectId,
  time: e.recordedAt,
  data: e.data,
});

/** A CloudEvent of mas.events.v1; undefined for one without its stream version (published before
 * the version travelled with it), which a fold cannot place. */
export const fromCloudEvent = (e: CloudEvent<Record<string, unknown>>): DomainEvent | undefined =>
  typeof e.streamversion === 'number'
    ? {
        id: e.id,
        type: e.type,
        streamId: e.subject,
        version: e.streamversion,
        projectId: e.projectid,
        time: e.time,
        data: e.data,
      }
    : undefined;

/** How long reads show a request or a closed session (the read models' retention, apps/relay):
 * past it, a stream that is still in the event store is not shown again by a catch-up. */
export const READ_MODEL_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** The read models' retention as SQL, by table: the rows past it, which apps/relay prunes and a
 * projection rebuild drops from its new tables before it swaps them in. */
export const READ_MODEL_EXPIRED = {
  request_log: `updated_at < now() - interval '30 days'`,
  sessions: `status <> 'active' and expires_at < now() - interval '30 days'`,
} as const;

/** Whether something last changed at `iso` is past the read models' retention. */
export const pastRetention = (iso: string, now = Date.now()): boolean =>
  new Date(iso).getTime() < now - READ_MODEL_RETENTION_MS;
