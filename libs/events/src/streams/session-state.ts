import { EVENT_TYPES, type SessionCreatedData, type SessionStateData, type SessionStatus } from '#libs/contracts';
import type { DomainEvent } from './domain-event.js';

/** A session as its events fold it; the sessions read model stores exactly this. */
export interface SessionState {
  readonly sessionId: string;
  readonly projectId: string;
  readonly status: SessionStatus;
  readonly createdAt: string;
  readonly lastActivityAt: string;
  readonly expiresAt: string;
  readonly messageCount: number;
  /** The session workflow's write counter of the last state event folded in. */
  readonly revision: number;
  readonly version: number;
}

const STATE_EVENTS = new Set<string>([
  EVENT_TYPES.sessionMessageAnswered,
  EVENT_TYPES.sessionExpired,
  EVENT_TYPES.sessionEnded,
  EVENT_TYPES.sessionReconciled,
]);

export const isSessionEvent = (type: string): boolean =>
  STATE_EVENTS.has(type) ||
  type === EVENT_TYPES.sessionCreated ||
  type === EVENT_TYPES.sessionMessageAccepted ||
  type === EVENT_TYPES.sessionMessagePaused;

/** Folds one event into the session (pure); an event at or below the state's version changes nothing. */
export function evolveSession(state: SessionState | undefined, event: DomainEvent): SessionState | undefined {
  if (!isSessionEvent(event.type)) return state;
  if (state && event.version <= state.version) return state;
  if (event.type === EVENT_TYPES.sessionCreated) {
    const d = event.data as unknown as SessionCreatedData;
    // A state event may have come first (a creation whose transaction lost the race): it stands.
    if (state) return { ...state, version: event.version };
    return {
      sessionId: d.sessionId,
      projectId: event.projectId,
      status: 'active',
      createdAt: d.createdAt,
      lastActivityAt: d.createdAt,
      expiresAt: d.expiresAt,
      messageCount: 0,
      revision: 0,
      version: event.version,
    };
  }
  if (STATE_EVENTS.has(event.type)) {
    const d = event.data as unknown as Partial<SessionStateData>;
    if (state && d.revision !== undefined && d.revision <= state.revision) return { ...state, version: event.version };
    // Events recorded before they carried the whole state (a reconciler's `{ sessionId, status }`)
    // keep what the state had.
    const createdAt = d.createdAt ?? state?.createdAt;
    if (!createdAt || !d.status) return state && { ...state, version: event.version };
    return {
      sessionId: d.sessionId ?? event.streamId.slice('session-'.length),
      projectId: event.projectId,
      status: d.status,
      createdAt,
      lastActivityAt: d.lastActivityAt ?? state?.lastActivityAt ?? createdAt,
      expiresAt: d.expiresAt ?? event.time,
      messageCount: d.messageCount ?? state?.messageCount ?? 0,
      revision: d.revision ?? state?.revision ?? 0,
      version: event.version,
    };
  }
  // Accepted or paused: a record of the conversation's progress. The session's times are the
  // workflow's own and arrive with the next state event (answered, expired, ended), as before.
  if (!state) return undefined;
  return { ...state, version: event.version };
}

/** A row of the sessions read model (apps/projector), as PostgreSQL returns it. */
export interface SessionRow {
  id: string;
  project_id: string;
  status: SessionStatus;
  message_count: number;
  created_at: Date;
  last_activity_at: Date;
  expires_at: Date;
  revision: number;
  version: number;
}

/** The session state a read-model row holds (the projector writes it, the api reads it). */
export const sessionStateFromRow = (r: SessionRow): SessionState => ({
  sessionId: r.id,
  projectId: r.project_id,
  status: r.status,
  createdAt: r.created_at.toISOString(),
  lastActivityAt: r.last_activity_at.toISOString(),
  expiresAt: r.expires_at.toISOString(),
  messageCount: r.message_count,
  revision: r.revision,
  version: r.version,
});
