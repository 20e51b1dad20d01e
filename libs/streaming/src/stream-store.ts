import type { DataSource } from 'typeorm';
import type { StreamEvent } from '#libs/contracts';

/** Events of one request, as they are stored and sent live together. */
export interface RequestEvents {
  readonly requestId: string;
  readonly projectId: string;
  readonly events: readonly StreamEvent[];
}

/** How long a finished run's stream events stay replayable by default (STREAM_RETENTION_SECONDS). */
export const STREAM_RETENTION_SECONDS = 24 * 60 * 60;

/**
 * Longer than any run stays silent (a tool pause is 5 minutes, a model call a few): a stream whose
 * last event is this much older than the retention window and that never ended belongs to a run
 * stopped from outside (an operator's terminate writes no end event), and goes.
 */
const SILENT_RUN_SECONDS = 24 * 60 * 60;

/** Old events retention reads a page at a time (their requests' expired streams go in one statement). */
const DELETE_PAGE = 2000;

/** Whether a request's stream has expired, judged by its last event `l` (created_at, type):
 * a finished run's events are kept for the window after its end, a running one's while it runs. */
const EXPIRED = `(l.created_at < now() - make_interval(secs => $RET)
  and (l.type in ('done', 'error') or l.created_at < now() - make_interval(secs => $RET + ${SILENT_RUN_SECONDS})))`;

/** The event of the highest seq of the request named by `$REQ`. */
const LAST = (req: string) =>
  `(select created_at, type from stream_events where request_id = ${req} order by seq desc limit 1)`;

/**
 * The replay copy of stream events in PostgreSQL, indexed by request id. Retention goes by request,
 * not by row: every event of a run, its first token included, is replayable for the run's whole
 * life plus the window (DESIGN.md section 9), however long it paused; the terminal event with them.
 */
export class StreamStore {
  constructor(
    private readonly db: DataSource,
    private readonly retentionSeconds: number = STREAM_RETENTION_SECONDS,
    /** Old events retention reads at a time (a test makes it small). */
    private readonly deletePage: number = DELETE_PAGE,
  ) {}

  /** Stores batches of events, of one request or several, in one statement; a retried step that
   * re-sends a seq keeps the first copy. */
  async save(batches: readonly RequestEvents[]): Promise<void> {
    const values: unknown[] = [];
    const rows: string[] = [];
    for (const { requestId, projectId, events } of batches)
      for (const e of events) {
        const b = values.push(requestId, e.seq, projectId, e.type, JSON.stringify(e.data)) - 5;
        rows.push(`($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5})`);
      }
    if (rows.length === 0) return;
    await this.db.query(
      `insert into stream_events (request_id, seq, project_id, type, data) values ${rows.join(', ')} on conflict do nothing`,
      values,
    );
  }

  /** Where events of `types` go: at `fromSeq` when the events stored from there on start with these
   * types (a re-run of the step that wrote them), else after the last stored event (also after the
   * tokens of a model call that failed half-way, which the workflow did not count). One query. */
  async seqFor(requestId: string, types: readonly string[], fromSeq?: number): Promise<number> {
    const rows: { next: number; stored: string[] | null }[] = await this.db.query(
      `select coalesce(max(seq), 0) + 1 as next, array_agg(type order by seq) filter (where seq >= $2) as stored from stream_events where request_id = $1`,
      [requestId, fromSeq ?? 0],
    );
    const { next, stored } = rows[0] ?? { next: 1, stored: null };
    const rerun =
      fromSeq !== undefined && stored !== null && types.length > 0 && types.every((type, i) => stored[i] === type);
    return rerun ? fromSeq : next;
  }

  /** The seq after the last stored event of a request (1 for none). */
  async nextSeq(requestId: string): Promise<number> {
    const rows: { max: number | null }[] = await this.db.query(
      `select max(seq) as max from stream_events where request_id = $1`,
      [requestId],
    );
    return (rows[0]?.max ?? 0) + 1;
  }

  /** Events after `afterSeq`, in order, if the request belongs to `projectId` and its stream has not expired. */
  async after(requestId: string, projectId: string, afterSeq: number, limit = 1000): Promise<StreamEvent[]> {
    const rows: { seq: number; type: StreamEvent['type']; data: Record<string, unknown> }[] = await this.db.query(
      `select seq, type, data from stream_events
        where request_id = $1 and project_id = $2 and seq > $3
          and not exists (select 1 from ${LAST('$1')} l where ${EXPIRED.replaceAll('$RET', '$5::int')})
        order by seq limit $4`,
      [requestId, projectId, afterSeq, limit, this.retentionSeconds],
    );
    return rows;
  }

  /** The text of the request's token events from `fromSeq` on, in order. */
  async tokenText(requestId: string, projectId: string, fromSeq: number): Promise<string> {
    const rows: { content: string | null }[] = await this.db.query(
      `select data->>'content' as content from stream_events where request_id = $1 and project_id = $2 and seq >= $3 and type = 'token' order by seq`,
      [requestId, projectId, fromSeq],
    );
    return rows.map((r) => r.content ?? '').join('');
  }

  /** Deletes the streams that have expired; the number of events deleted. Only requests with an
   * event older than the window are looked at (created_at index), each by its last event: the old
   * events are read in pages of DELETE_PAGE in created_at order from where the previous page ended,
   * and each page's expired requests deleted in one statement, so a backlog is many short
   * statements and a request that is still running is passed over, not read again. */
  async deleteExpired(): Promise<number> {
    let total = 0;
    // created_at as text: its microseconds, which a Date would drop, keep the page boundary exact.
    let after: { at: string; request_id: string; seq: number } | undefined;
    for (;;) {
      const page: { at: string; request_id: string; seq: number }[] = await this.db.query(
        `select created_at::text as at, request_id, seq from stream_events
          where created_at < now() - make_interval(secs => $1::int) and created_at >= $2::timestamptz and (created_at, request_id, seq) > ($2::timestamptz, $3::uuid, $4::int)
          order by created_at, request_id, seq limit $5`,
        // The first page from the start; `created_at >= $2` makes the index range begin at the boundary.
        [
          this.retentionSeconds,
          after?.at ?? '-infinity',
          after?.request_id ?? '00000000-0000-0000-0000-000000000000',
          after?.seq ?? 0,
          this.deletePage,
        ],
      );
      if (page.length === 0) return total;
      const [, count] = (await this.db.query(
        `delete from stream_events e using (
           select c.request_id from unnest($2::uuid[]) c (request_id) cross join lateral ${LAST('c.request_id')} l
            where ${EXPIRED.replaceAll('$RET', '$1::int')}) x
          where e.request_id = x.request_id`,
        [this.retentionSeconds, [...new Set(page.map((r) => r.request_id))]],
      )) as [unknown, number];
      total += count;
      if (page.length < this.deletePage) return total;
      after = page.at(-1);
    }
  }
}
