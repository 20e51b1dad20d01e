import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Events1763700000005 implements MigrationInterface {
  name = 'Events1763700000005';

  async up(q: QueryRunner): Promise<void> {
    // The event store: append-only; (stream_id, version) unique for optimistic concurrency.
    await q.query(`
      create table events (
        position bigserial primary key,
        event_id uuid not null unique,
        stream_id text not null,
        version integer not null check (version >= 1),
        type text not null,
        data jsonb not null,
        metadata jsonb not null,
        recorded_at timestamptz not null default now(),
        unique (stream_id, version)
      )`);
    // The transactional outbox: written in the same transaction as the events, published to
    // Kafka by the relay, marked when sent.
    await q.query(`
      create table outbox (
        id bigserial primary key,
        event_id uuid not null,
        topic text not null,
        key text not null,
        payload jsonb not null,
        created_at timestamptz not null default now(),
        published_at timestamptz,
        unique (event_id, topic)
      )`);
    await q.query(`create index outbox_unpublished_idx on outbox (id) where published_at is null`);
    // Read models of the projector, and the events each projection has applied.
    await q.query(`
      create table projection_processed (
        projection text not null,
        event_id uuid not null,
        processed_at timestamptz not null default now(),
        primary key (projection, event_id)
      )`);
    await q.query(`
      create table usage_totals (
        project_id uuid not null,
        period_start timestamptz not null,
        requests integer not null default 0,
        credits integer not null default 0,
        input_tokens bigint not null default 0,
        output_tokens bigint not null default 0,
        primary key (project_id, period_start)
      )`);
    await q.query(`
      create table usage_by_capability (
        project_id uuid not null,
        period_start timestamptz not null,
        capability text not null,
        requests integer not null default 0,
        primary key (project_id, period_start, capability)
      )`);
    await q.query(`
      create table request_log (
        request_id uuid primary key,
        project_id uuid not null,
        session_id uuid,
        status text not null,
        capabilities text[] not null default '{}',
        credits integer not null default 0,
        tokens bigint not null default 0,
        error_code text,
        created_at timestamptz not null,
        updated_at timestamptz not null
      )`);
    await q.query(`create index request_log_project_idx on request_log (project_id, created_at desc)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of [
      'request_log',
      'usage_by_capability',
      'usage_totals',
      'projection_processed',
      'outbox',
      'events',
    ]) {
      await q.query(`drop table ${table}`);
    }
  }
}
