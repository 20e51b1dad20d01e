import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { sessionStreamId, type SessionStatus } from '#libs/contracts';
import { pastRetention, SessionStream, sessionStateFromRow, type SessionRow, type SessionState } from '#libs/events';
import type { SessionRecord } from '#libs/resources';

/** A session as the api reads it. */

const COLUMNS =
  's.id, s.project_id, s.status, s.message_count, s.created_at, s.last_activity_at, s.expires_at, s.revision, s.version';

const toRecord = (s: SessionState): SessionRecord => ({
  id: s.sessionId,
  projectId: s.projectId,
  status: s.status,
  messageCount: s.messageCount,
  createdAt: new Date(s.createdAt),
  lastActivityAt: new Date(s.lastActivityAt),
  expiresAt: new Date(s.expiresAt),
});

/** Whether reads show the session: a closed one for the read models' 30 days. */
const shown = (s: SessionState): boolean => s.status === 'active' || !pastRetention(s.expiresAt);

/** Newest first, by (created_at, id). */
const newestFirst = (a: SessionRecord, b: SessionRecord): number =>
  b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/**
 * Sessions for the api: creation within the limit (through the session stream's appender, which
 * owns the slots), and reads from the sessions read model (apps/projector). A read is consistent
 * with what the caller has seen: a row behind its stream (the projector has not yet applied the
 * latest events) is brought up to date from the event store, so an answer returned to a caller
 * is readable at once, whatever the projector's lag, and after Temporal has forgotten the session.
 */
@Injectable()
export class SessionsRepository {
  constructor(
    private readonly db: DataSource,
    private readonly sessions: SessionStream,
  ) {}

  /**
   * Creates an active session unless the project already has `limit` of them, and runs `start`
   * (the workflow start) before committing; a `start` that throws rolls the creation back. A
   * session of this id that exists already (an Idempotency-Key retry of a creation that committed)
   * is returned as it is, and nothing is started. 'limit' when the limit is reached.
   */
  async createWithinLimit(
    session: Omit<SessionRecord, 'status' | 'messageCount'>,
    limit: number,
    start: () => Promise<void>,
  ): Promise<SessionRecord | 'limit'> {
    // The slot and `session.created` commit first, in a short transaction: no transaction or pool
    // connection is held while Temporal answers. A workflow that then fails to start leaves a slot
    // whose workflow does not exist, and the reconciler gives it back; a retry with the same
    // Idempotency-Key starts it (the start joins a workflow that did start).
    const outcome = await this.db.transaction(async (tx) => {
      const created = await this.sessions.create(
        tx,
        {
          sessionId: session.id,
          projectId: session.projectId,
          createdAt: session.createdAt,
          expiresAt: session.expiresAt,
        },
        limit,
      );
      if (created !== 'exists') return created;
      const existing = await this.sessions.state(tx, session.id);
      return existing?.projectId === session.projectId ? toRecord(existing) : ('created' as const);
    });
    if (outcome === 'limit') return 'limit';
    if (outcome !== 'created' && outcome.status !== 'active') return outcome;
    await start();
    return outcome === 'created' ? { ...session, status: 'active', messageCount: 0 } : outcome;
  }

  /** A session of `projectId`; another project's session is not found. */
  async find(projectId: string, id: string): Promise<SessionRecord | undefined> {
    const state = await this.current(this.db.manager, id);
    return state?.projectId === projectId && shown(state) ? toRecord(state) : undefined;
  }

  /** The project's sessions, newest first, after the session `after` (a cursor) when given. */
  async list(
    projectId: string,
    options: { limit: number; after?: string; status?: SessionStatus },
  ): Promise<{ records: SessionRecord[]; hasMore: boolean }> {
    const tx = this.db.manager;
    // The project's sessions whose row is behind their stream, brought up to date from the events:
    // those the projector has not written up to the stream's version (the partial index
    // streams_sessions_behind_idx holds exactly these, so a session retention pruned from the read
    // model is not read again), checked against the row itself, looked up by its key for each (the
    // lateral subquery's limit keeps it so: joined plainly, the planner, which cannot estimate how
    // few streams are behind, hashed the whole sessions table).
    const behind: (SessionRow & { stream_id: string; stream_version: number })[] = await tx.query(
      `select st.stream_id, st.version as stream_version, ${COLUMNS}
         from streams st left join lateral (select * from sessions where id = substr(st.stream_id, 9)::uuid limit 1) s on true
        where st.project_id = $1 and st.stream_id like 'session-%' and (st.projected_version is null or st.projected_version < st.version)
          and (s.version is null or s.version < st.version)`,
      [projectId],
    );
    const fresh = new Map<string, SessionRecord>();
    for (const r of behind) {
      const id = r.stream_id.slice('session-'.length);
      const state = await this.sessions.state(tx, id, r.id ? sessionStateFromRow(r) : undefined);
      if (state?.projectId === projectId && shown(state)) fresh.set(id, toRecord(state));
    }
    const cursor = options.after ? await this.find(projectId, options.after) : undefined;
    const rows: SessionRow[] = await tx.query(
      `select ${COLUMNS} from sessions s
        where s.project_id = $1
          and ($2::text is null or s.status = $2::text)
          and ($3::timestamptz is null or (s.created_at, s.id) < ($3::timestamptz, $4::uuid))
        order by s.created_at desc, s.id desc
        limit $5`,
      [
        projectId,
        options.status ?? null,
        cursor?.createdAt ?? null,
        cursor?.id ?? null,
        options.limit + 1 + fresh.size,
      ],
    );
    const after = (r: SessionRecord): boolean => !cursor || newestFirst(cursor, r) < 0;
    const records = [
      ...rows.map((r) => toRecord(sessionStateFromRow(r))).filter((r) => !fresh.has(r.id)),
      ...[...fresh.values()].filter((r) => (!options.status || r.status === options.status) && after(r)),
    ].sort(newestFirst);
    return { records: records.slice(0, options.limit), hasMore: records.length > options.limit };
  }

  /** The session's read-model row, caught up with its stream when the projector is behind. */
  private async current(tx: EntityManager, id: string): Promise<SessionState | undefined> {
    const rows: (Partial<SessionRow> & { stream_version: number | null })[] = await tx.query(
      `select st.version as stream_version, ${COLUMNS}
         from (select $1::uuid as id) k left join sessions s on s.id = k.id left join streams st on st.stream_id = $2`,
      [id, sessionStreamId(id)],
    );
    const row = rows[0];
    const projected = row?.id ? sessionStateFromRow(row as SessionRow) : undefined;
    if (!row?.stream_version || (projected && projected.version >= row.stream_version)) return projected;
    return this.sessions.state(tx, id, projected);
  }
}
