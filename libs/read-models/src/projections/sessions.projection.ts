import type { EntityManager } from 'typeorm';
import { TOPICS } from '#libs/contracts';
import {
  evolveSession,
  fromCloudEvent,
  READ_MODEL_EXPIRED,
  READ_MODEL_RETENTION_MS,
  sessionStateFromRow,
  type CloudEvent,
  type SessionRow,
  type SessionState,
} from '#libs/events';
import { tableName, type Projection, type TableNames } from './projection.js';

/** The sessions read model (GET /v1/sessions[/{id}]): one row per session, the fold of its stream
 * (evolveSession in libs/events) with the stream version it reflects. */
export const sessionsProjection: Projection = {
  name: 'sessions',
  topic: TOPICS.events,
  tables: ['sessions'],
  fromEventStore: true,
  rebuild: {
    table: 'sessions',
    streamPrefix: 'session-',
    expired: READ_MODEL_EXPIRED.sessions,
    windowDays: READ_MODEL_RETENTION_MS / 86_400_000,
    row: (events) => {
      const s = events.reduce<SessionState | undefined>((state, e) => evolveSession(state, e), undefined);
      return (
        s && {
          id: s.sessionId,
          project_id: s.projectId,
          status: s.status,
          message_count: s.messageCount,
          created_at: s.createdAt,
          last_activity_at: s.lastActivityAt,
          expires_at: s.expiresAt,
          revision: s.revision,
          version: s.version,
        }
      );
    },
  },
  accepts: (event) => typeof event.subject === 'string' && event.subject.startsWith('session-'),
  async apply(tx: EntityManager, event: CloudEvent<Record<string, unknown>>, tables?: TableNames): Promise<void> {
    const domain = fromCloudEvent(event);
    if (!domain || !sessionsProjection.accepts(event)) return;
    // The live read model notes on the stream's row the version it reflects (GET /v1/sessions reads
    // only the streams it is behind); a rebuild's new table does not, it catches up before its swap.
    if (!tables) {
      await tx.query(
        `update streams set projected_version = $2 where stream_id = $1 and (projected_version is null or projected_version < $2)`,
        [domain.streamId, domain.version],
      );
    }
    const table = tableName(tables, 'sessions');
    const rows: SessionRow[] = await tx.query(`select * from ${table} where id = $1 for update`, [
      domain.streamId.slice('session-'.length),
    ]);
    const before = rows[0] && sessionStateFromRow(rows[0]);
    const s = evolveSession(before, domain);
    if (!s || s === before) return;
    await tx.query(
      `insert into ${table} (id, project_id, status, message_count, created_at, last_activity_at, expires_at, revision, version)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       on conflict (id) do update set
         status = excluded.status, message_count = excluded.message_count, created_at = excluded.created_at,
         last_activity_at = excluded.last_activity_at, expires_at = excluded.expires_at, revision = excluded.revision, version = excluded.version`,
      [
        s.sessionId,
        s.projectId,
        s.status,
        s.messageCount,
        s.createdAt,
        s.lastActivityAt,
        s.expiresAt,
        s.revision,
        s.version,
      ],
    );
  },
};
