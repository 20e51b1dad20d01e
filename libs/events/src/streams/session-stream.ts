import type { DataSource, EntityManager } from 'typeorm';
import { EVENT_TYPES, sessionStreamId, type EventType, type SessionStateData, type SessionView } from '#libs/contracts';
import { deterministicUuid } from '../deterministic-id.js';
import { ConcurrencyError, type EventStore } from '../event-store.js';
import { fromStored } from './domain-event.js';
import { evolveSession, type SessionState } from './session-state.js';

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * The one appender of `session-<id>` streams, and the owner of `session_slots`: a slot is taken with
 * `session.created` and given back with `session.expired`, `session.ended` or `session.reconciled`,
 * in the same transaction. The limit of active sessions is counted from the slots under a
 * per-project advisory lock, so it is exact across api replicas whatever the read model's lag.
 */
export class SessionStream {
  constructor(private readonly store: EventStore) {}

  /** Creates the session within the project's limit of active sessions, in the caller's
   * transaction: 'exists' when the stream exists already (a retry of a creation that committed). */
  async create(
    tx: EntityManager,
    input: { sessionId: string; projectId: string; createdAt: Date; expiresAt: Date },
    limit: number,
  ): Promise<'created' | 'exists' | 'limit'> {
    // The project's lock, the stream's check, the count and the slot: one round trip.
    const [slot] = (await tx.query(`select take_session_slot($1, $2, $3, $4) as outcome`, [
      input.sessionId,
      input.projectId,
      input.createdAt,
      limit,
    ])) as { outcome: 'taken' | 'exists' | 'limit' }[];
    if (slot!.outcome !== 'taken') return slot!.outcome;
    try {
      await this.store.append(tx, sessionStreamId(input.sessionId), 0, [
        {
          eventId: deterministicUuid(input.sessionId, EVENT_TYPES.sessionCreated),
          type: EVENT_TYPES.sessionCreated,
          data: {
            sessionId: input.sessionId,
            createdAt: input.createdAt.toISOString(),
            expiresAt: input.expiresAt.toISOString(),
          },
          metadata: { projectId: input.projectId, correlationId: input.sessionId, causationId: input.sessionId },
        },
      ]);
    } catch (e) {
      if (e instanceof ConcurrencyError) return 'exists';
      throw e;
    }
    return 'created';
  }

  /** The session accepted a message (the request's id). */
  async messageAccepted(
    tx: EntityManager,
    input: { sessionId: string; projectId: string; requestId: string },
  ): Promise<void> {
    await this.appendOne(
      tx,
      input.sessionId,
      input.projectId,
      EVENT_TYPES.sessionMessageAccepted,
      deterministicUuid(input.sessionId, input.requestId, EVENT_TYPES.sessionMessageAccepted),
      input.requestId,
      {
        sessionId: input.sessionId,
        requestId: input.requestId,
      },
    );
  }

  /** The message's request paused for tool outputs at `stop`. */
  async messagePaused(
    tx: EntityManager,
    input: { sessionId: string; projectId: string; requestId: string; stop: number },
  ): Promise<void> {
    await this.appendOne(
      tx,
      input.sessionId,
      input.projectId,
      EVENT_TYPES.sessionMessagePaused,
      deterministicUuid(input.requestId, input.stop, EVENT_TYPES.sessionMessagePaused),
      input.requestId,
      {
        sessionId: input.sessionId,
        requestId: input.requestId,
      },
    );
  }

  /** A state the session workflow recorded (its `revision` makes the event once-only): answered
   * while active, expired, or ended; the last two give the slot back. */
  async recorded(tx: EntityManager, view: SessionView): Promise<void> {
    const type: EventType =
      view.status === 'expired'
        ? EVENT_TYPES.sessionExpired
        : view.status === 'ended'
          ? EVENT_TYPES.sessionEnded
          : EVENT_TYPES.sessionMessageAnswered;
    const data: SessionStateData = {
      sessionId: view.sessionId,
      status: view.status,
      createdAt: iso(view.createdAt),
      lastActivityAt: iso(view.lastActivityAt),
      expiresAt: iso(view.expiresAt),
      messageCount: view.messageCount,
      revision: view.revision,
    };
    await this.appendOne(
      tx,
      view.sessionId,
      view.projectId,
      type,
      deterministicUuid(view.sessionId, 'revision', view.revision, type),
      view.sessionId,
      { ...data },
    );
    if (view.status !== 'active') await tx.query(`delete from session_slots where session_id = $1`, [view.sessionId]);
  }

  /** Frees the slot of a session whose workflow closed without recording its end (the reconciler);
   * false when the slot was free already. */
  async reconciled(tx: EntityManager, sessionId: string, projectId: string): Promise<boolean> {
    const [freed] = (await tx.query(`delete from session_slots where session_id = $1 returning 1`, [sessionId])) as [
      unknown[],
      number,
    ];
    if (freed.length === 0) return false;
    const state = await this.state(tx, sessionId);
    const now = new Date().toISOString();
    const data: SessionStateData = {
      sessionId,
      status: 'ended',
      createdAt: state?.createdAt ?? now,
      lastActivityAt: state?.lastActivityAt ?? now,
      expiresAt: now,
      messageCount: state?.messageCount ?? 0,
    };
    await this.appendOne(
      tx,
      sessionId,
      projectId,
      EVENT_TYPES.sessionReconciled,
      deterministicUuid(sessionId, EVENT_TYPES.sessionReconciled),
      sessionId,
      { ...data },
    );
    return true;
  }

  /** Up to `limit` slots taken before `before` for the reconciler to look at, marked as looked at:
   * those never looked at first (newest first), then those looked at longest ago, so slots held by
   * workflows that still run do not hide the others from later passes. */
  async slotsToCheck(db: DataSource, before: Date, limit: number): Promise<{ sessionId: string; projectId: string }[]> {
    const [rows] = (await db.query(
      `update session_slots set checked_at = now() where session_id in (
         select session_id from session_slots where created_at < $1 order by checked_at nulls first, created_at desc limit $2 for update skip locked)
       returning session_id, project_id`,
      [before, limit],
    )) as [{ session_id: string; project_id: string }[], number];
    return rows.map((r) => ({ sessionId: r.session_id, projectId: r.project_id }));
  }

  /** The session folded from its stream in the event store (after `from`, when given). */
  async state(tx: EntityManager, sessionId: string, from?: SessionState): Promise<SessionState | undefined> {
    const events = await this.store.readStream(tx, sessionStreamId(sessionId), from?.version ?? 0);
    return events.map(fromStored).reduce<SessionState | undefined>(evolveSession, from);
  }

  private async appendOne(
    tx: EntityManager,
    sessionId: string,
    projectId: string,
    type: EventType,
    eventId: string,
    causationId: string,
    data: Record<string, unknown>,
  ): Promise<void> {
    await this.store.append(tx, sessionStreamId(sessionId), 'any', [
      { eventId, type, data, metadata: { projectId, correlationId: sessionId, causationId } },
    ]);
  }
}
