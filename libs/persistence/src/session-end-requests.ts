import type { DataSource } from 'typeorm';

/** A session's end, asked for where Temporal is not reachable (the console), waiting for a worker. */
export interface SessionEndRequest {
  readonly sessionId: string;
  readonly projectId: string;
  readonly requestedAt: Date;
  readonly attempts: number;
}

/**
 * The only reader and writer of `session_end_requests` (migration 1763700000051): the console
 * asks, a worker's SessionEndService sends the session workflow its end Update and then marks the
 * request done (deletes it). A request that could not be sent stays, with its error, for the next try.
 */
export class SessionEndRequests {
  constructor(private readonly db: DataSource) {}

  /** Asks for the session's end; asking again changes nothing. */
  async request(projectId: string, sessionId: string): Promise<void> {
    await this.db.query(
      `insert into session_end_requests (session_id, project_id) values ($1, $2) on conflict (session_id) do nothing`,
      [sessionId, projectId],
    );
  }

  /** The project's session end that is still waiting, if any. */
  async pending(projectId: string, sessionId: string): Promise<SessionEndRequest | undefined> {
    const rows: { session_id: string; project_id: string; requested_at: Date; attempts: number }[] =
      await this.db.query(
        `select session_id, project_id, requested_at, attempts from session_end_requests where session_id = $1 and project_id = $2`,
        [sessionId, projectId],
      );
    return rows.map(of)[0];
  }

  /** The oldest requests waiting. */
  async waiting(limit = 50): Promise<SessionEndRequest[]> {
    const rows: { session_id: string; project_id: string; requested_at: Date; attempts: number }[] =
      await this.db.query(
        `select session_id, project_id, requested_at, attempts from session_end_requests order by requested_at limit $1`,
        [limit],
      );
    return rows.map(of);
  }

  /** The request is carried out (or there is nothing left to end). */
  async done(sessionId: string): Promise<void> {
    await this.db.query(`delete from session_end_requests where session_id = $1`, [sessionId]);
  }

  /** A try failed (Temporal unreachable): kept for the next one, with the reason (no customer content). */
  async failed(sessionId: string, error: string): Promise<void> {
    await this.db.query(
      `update session_end_requests set attempts = attempts + 1, last_error = $2 where session_id = $1`,
      [sessionId, error.slice(0, 500)],
    );
  }
}

const of = (r: {
  session_id: string;
  project_id: string;
  requested_at: Date;
  attempts: number;
}): SessionEndRequest => ({
  sessionId: r.session_id,
  projectId: r.project_id,
  requestedAt: r.requested_at,
  attempts: r.attempts,
});
