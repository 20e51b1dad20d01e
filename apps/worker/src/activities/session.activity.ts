import type { DataSource } from 'typeorm';
import type { SessionActivities } from '#libs/contracts';

/** Keeps the sessions read model current (a local activity: one short statement). */
export class SessionReadModelActivities {
  constructor(private readonly db: DataSource) {}

  /** An upsert guarded by the workflow's revision: a retried or late write of an older state changes
   * nothing, and a row the api did not get to commit is created. */
  readonly recordSession: SessionActivities['recordSession'] = async (view) => {
    await this.db.query(
      `insert into sessions (id, project_id, status, message_count, created_at, last_activity_at, expires_at, revision)
       values ($1, $2, $3, $4, to_timestamp($5 / 1000.0), to_timestamp($6 / 1000.0), to_timestamp($7 / 1000.0), $8)
       on conflict (id) do update set
         status = excluded.status,
         message_count = excluded.message_count,
         last_activity_at = excluded.last_activity_at,
         expires_at = excluded.expires_at,
         revision = excluded.revision
       where sessions.revision < excluded.revision`,
      [view.sessionId, view.projectId, view.status, view.messageCount, view.createdAt, view.lastActivityAt, view.expiresAt, view.revision],
    );
  };
}
