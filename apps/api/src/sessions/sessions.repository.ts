import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { SessionStatus } from '#libs/contracts';

/** A row of the sessions read model as the api reads it. */
export interface SessionRecord {
  readonly id: string;
  readonly projectId: string;
  readonly status: SessionStatus;
  readonly messageCount: number;
  readonly createdAt: Date;
  readonly lastActivityAt: Date;
  readonly expiresAt: Date;
}

interface SessionRow {
  id: string;
  project_id: string;
  status: SessionStatus;
  message_count: number;
  created_at: Date;
  last_activity_at: Date;
  expires_at: Date;
}

const COLUMNS = 'id, project_id, status, message_count, created_at, last_activity_at, expires_at';

const toRecord = (r: SessionRow): SessionRecord => ({
  id: r.id,
  projectId: r.project_id,
  status: r.status,
  messageCount: r.message_count,
  createdAt: r.created_at,
  lastActivityAt: r.last_activity_at,
  expiresAt: r.expires_at,
});

/** The sessions read model: the active-session limit, and reads for GET. */
@Injectable()
export class SessionsRepository {
  constructor(private readonly db: DataSource) {}

  /**
   * Inserts an active session unless the project already has `limit` active ones, and runs `start`
   * (the workflow start) before committing. A per-project advisory lock makes the count exact across
   * api replicas; a `start` that throws rolls the row back. A session of this id that exists already
   * (an Idempotency-Key retry of a creation that committed) is returned as it is, and nothing is
   * started. 'limit' when the limit is reached.
   */
  async createWithinLimit(session: Omit<SessionRecord, 'status' | 'messageCount'>, limit: number, start: () => Promise<void>): Promise<SessionRecord | 'limit'> {
    return this.db.transaction(async (tx) => {
      await tx.query(`select pg_advisory_xact_lock(hashtextextended($1, 0))`, [`sessions:${session.projectId}`]);
      const existing: SessionRow[] = await tx.query(`select ${COLUMNS} from sessions where id = $1 and project_id = $2`, [session.id, session.projectId]);
      if (existing[0]) return toRecord(existing[0]);
      const [row] = (await tx.query(`select count(*)::int as n from sessions where project_id = $1 and status = 'active'`, [session.projectId])) as { n: number }[];
      if ((row?.n ?? 0) >= limit) return 'limit';
      // The session's own workflow may have written its row first (a retry joining a workflow that an
      // attempt started without committing): the row is the workflow's then.
      await tx.query(
        `insert into sessions (id, project_id, status, message_count, created_at, last_activity_at, expires_at) values ($1, $2, 'active', 0, $3, $4, $5) on conflict (id) do nothing`,
        [session.id, session.projectId, session.createdAt, session.lastActivityAt, session.expiresAt],
      );
      await start();
      return { ...session, status: 'active', messageCount: 0 };
    });
  }

  /** A session of `projectId`; another project's session is not found. */
  async find(projectId: string, id: string): Promise<SessionRecord | undefined> {
    const rows: SessionRow[] = await this.db.query(`select ${COLUMNS} from sessions where id = $1 and project_id = $2`, [id, projectId]);
    return rows[0] && toRecord(rows[0]);
  }

  /** The project's sessions, newest first, after the session `after` (a cursor) when given. */
  async list(projectId: string, options: { limit: number; after?: string; status?: SessionStatus }): Promise<{ records: SessionRecord[]; hasMore: boolean }> {
    const rows: SessionRow[] = await this.db.query(
      `select ${COLUMNS} from sessions s
        where s.project_id = $1
          and ($2::text is null or s.status = $2::text)
          and ($3::uuid is null or (s.created_at, s.id) < (select c.created_at, c.id from sessions c where c.id = $3::uuid and c.project_id = $1))
        order by s.created_at desc, s.id desc
        limit $4`,
      [projectId, options.status ?? null, options.after ?? null, options.limit + 1],
    );
    return { records: rows.slice(0, options.limit).map(toRecord), hasMore: rows.length > options.limit };
  }
}
