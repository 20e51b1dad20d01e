import type { DataSource } from 'typeorm';
import type { StreamEvent } from '#libs/contracts';

/** How long stream events can be replayed (GET /v1/agent/{id}/events). */
export const STREAM_RETENTION_HOURS = 24;

/** The replay copy of stream events in PostgreSQL, indexed by request id. */
export class StreamStore {
  constructor(private readonly db: DataSource) {}

  /** Stores a batch; a retried step that re-sends a seq keeps the first copy. */
  async save(requestId: string, projectId: string, events: readonly StreamEvent[]): Promise<void> {
    if (events.length === 0) return;
    const values: unknown[] = [];
    const rows = events.map((e, i) => {
      values.push(requestId, e.seq, projectId, e.type, JSON.stringify(e.data));
      const b = i * 5;
      return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5})`;
    });
    await this.db.query(`insert into stream_events (request_id, seq, project_id, type, data) values ${rows.join(', ')} on conflict do nothing`, values);
  }

  /** The seq after the last stored event of a request (1 for none). */
  async nextSeq(requestId: string): Promise<number> {
    const rows: { max: number | null }[] = await this.db.query(`select max(seq) as max from stream_events where request_id = $1`, [requestId]);
    return (rows[0]?.max ?? 0) + 1;
  }

  /** Events after `afterSeq`, in order, if the request belongs to `projectId`. */
  async after(requestId: string, projectId: string, afterSeq: number, limit = 1000): Promise<StreamEvent[]> {
    const rows: { seq: number; type: StreamEvent['type']; data: Record<string, unknown> }[] = await this.db.query(
      `select seq, type, data from stream_events where request_id = $1 and project_id = $2 and seq > $3 and created_at > now() - make_interval(hours => $5) order by seq limit $4`,
      [requestId, projectId, afterSeq, limit, STREAM_RETENTION_HOURS],
    );
    return rows;
  }

  /** Whether the request has any stream event of this project (within retention). */
  async exists(requestId: string, projectId: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(`select 1 from stream_events where request_id = $1 and project_id = $2 limit 1`, [requestId, projectId]);
    return rows.length > 0;
  }

  async deleteExpired(): Promise<number> {
    const [, count] = (await this.db.query(`delete from stream_events where created_at < now() - make_interval(hours => $1)`, [STREAM_RETENTION_HOURS])) as [unknown, number];
    return count;
  }
}
