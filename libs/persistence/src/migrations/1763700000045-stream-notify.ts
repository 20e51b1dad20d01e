import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Open streams wait on one listener per api process (LISTEN mas_stream, libs/streaming
 * StreamSignals) instead of each polling PostgreSQL (issue 28). The writes themselves notify, at
 * commit, so no writer changes:
 * - `e <request id> <seq>`: events of the request were stored, up to `seq` (once per statement
 *   and request: a token batch is one notification);
 * - `r <request id>`: the request's event stream moved (its admission, a stop recorded, tool
 *   outputs taken): what a stream whose end is not stored, or a streamed request waiting for its
 *   admission, waits for.
 * Expand only: the previous release neither listens nor minds.
 */
export class StreamNotify1763700000045 implements MigrationInterface {
  name = 'StreamNotify1763700000045';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      create function stream_events_notify() returns trigger language plpgsql as $$
      begin
        perform pg_notify('mas_stream', 'e ' || request_id::text || ' ' || max(seq)::text) from added group by request_id;
        return null;
      end
      $$`);
    await q.query(
      `create trigger stream_events_notify after insert on stream_events referencing new table as added for each statement execute function stream_events_notify()`,
    );
    await q.query(`
      create function request_stream_notify() returns trigger language plpgsql as $$
      begin
        perform pg_notify('mas_stream', 'r ' || substr(new.stream_id, 15));
        return null;
      end
      $$`);
    await q.query(
      `create trigger request_stream_notify after insert or update on streams for each row when (new.stream_id like 'agent-request-%') execute function request_stream_notify()`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop trigger request_stream_notify on streams`);
    await q.query(`drop function request_stream_notify()`);
    await q.query(`drop trigger stream_events_notify on stream_events`);
    await q.query(`drop function stream_events_notify()`);
  }
}
