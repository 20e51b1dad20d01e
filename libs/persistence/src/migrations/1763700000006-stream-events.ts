import type { MigrationInterface, QueryRunner } from 'typeorm';

export class StreamEvents1763700000006 implements MigrationInterface {
  name = 'StreamEvents1763700000006';

  async up(q: QueryRunner): Promise<void> {
    // SSE events of streamed requests, for replay after a dropped connection (Kafka carries the
    // live fan-out). Kept for 24 hours.
    await q.query(`
      create table stream_events (
        request_id uuid not null,
        seq integer not null,
        project_id uuid not null,
        type text not null,
        data jsonb not null,
        created_at timestamptz not null default now(),
        primary key (request_id, seq)
      )`);
    await q.query(`create index stream_events_created_idx on stream_events (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop table stream_events`);
  }
}
