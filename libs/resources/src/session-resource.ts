import type { SessionStatus, SessionView } from '#libs/contracts';

/** A session as the api's sessions table keeps it. */
export interface SessionRecord {
  readonly id: string;
  readonly projectId: string;
  readonly status: SessionStatus;
  readonly messageCount: number;
  readonly createdAt: Date;
  readonly lastActivityAt: Date;
  readonly expiresAt: Date;
}

/** The session resource (contract 2.9, DESIGN.md section 7); times in unix seconds. */
export interface SessionResource {
  id: string;
  object: 'session';
  status: SessionStatus;
  created_at: number;
  last_activity_at: number;
  expires_at: number;
  message_count: number;
}

const seconds = (ms: number): number => Math.floor(ms / 1000);

export function renderRecord(r: SessionRecord): SessionResource {
  return {
    id: r.id,
    object: 'session',
    status: r.status,
    created_at: seconds(r.createdAt.getTime()),
    last_activity_at: seconds(r.lastActivityAt.getTime()),
    expires_at: seconds(r.expiresAt.getTime()),
    message_count: r.messageCount,
  };
}

export function renderView(v: SessionView): SessionResource {
  return {
    id: v.sessionId,
    object: 'session',
    status: v.status,
    created_at: seconds(v.createdAt),
    last_activity_at: seconds(v.lastActivityAt),
    expires_at: seconds(v.expiresAt),
    message_count: v.messageCount,
  };
}
