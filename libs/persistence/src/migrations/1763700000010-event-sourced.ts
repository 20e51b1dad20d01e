import type { MigrationInterface, QueryRunner } from 'typeorm';

export class EventSourced1763700000010 implements MigrationInterface {
  name = 'EventSourced1763700000010';

  async up(q: QueryRunner): Promise<void> {
    // One row per stream with its current version: an append moves it with a conditional update
    // (or an insert for a new stream), so two writers at the same version cannot both win.
    await q.query(`
      create table streams (
        stream_id text primary key,
        version integer not null check (version >= 1),
        project_id uuid
      )`);
    await q.query(`
      insert into streams (stream_id, version, project_id)
      select stream_id, max(version), (array_agg((metadata ->> 'projectId')::uuid order by version))[1] from events group by stream_id`);
    await q.query(`create index streams_project_idx on streams (project_id, stream_id)`);

    // The content of each stop of a request (message, tool calls, files, error), written with the
    // stop event in one transaction: events and Kafka carry ids and figures only.
    await q.query(`
      create table request_views (
        request_id uuid not null,
        stop integer not null,
        project_id uuid not null,
        view jsonb not null,
        recorded_at timestamptz not null default now(),
        primary key (request_id, stop)
      )`);
    await q.query(`create index request_views_recorded_idx on request_views (recorded_at)`);

    // The active-session slots: taken with session.created under the project's advisory lock, given
    // back with session.expired, session.ended or session.reconciled. The limit is counted here.
    await q.query(`
      create table session_slots (
        session_id uuid primary key,
        project_id uuid not null,
        created_at timestamptz not null default now(),
        -- when the reconciler last found the session's workflow still running (it looks at the
        -- never-checked first, then the longest unchecked)
        checked_at timestamptz
      )`);
    await q.query(`create index session_slots_project_idx on session_slots (project_id)`);
    await q.query(
      `insert into session_slots (session_id, project_id, created_at) select id, project_id, created_at from sessions where status = 'active'`,
    );

    // The read models are projections now: each row remembers the stream version it reflects.
    await q.query(`alter table sessions drop constraint if exists sessions_project_id_fkey`);
    await q.query(`alter table sessions add column version integer not null default 0`);
    await q.query(`alter table request_log add column version integer not null default 0`);
    await q.query(`alter table request_log add column stop integer not null default 0`);
    await q.query(`alter table request_log add column leg_credits integer not null default 0`);
    await q.query(`alter table request_log add column leg_tokens bigint not null default 0`);
    await q.query(`alter table request_log add column credits_remaining integer not null default 0`);
    await q.query(`alter table request_log add column requests_used integer not null default 0`);
    await q.query(`create index request_log_updated_idx on request_log (updated_at)`);
    // The events a rebuild applied to the new version of a projection's tables, until it swaps them in.
    await q.query(`
      create table projection_rebuild_applied (
        projection text not null,
        event_id uuid not null,
        primary key (projection, event_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop table projection_rebuild_applied`);
    await q.query(`drop index request_log_updated_idx`);
    for (const column of ['requests_used', 'credits_remaining', 'leg_tokens', 'leg_credits', 'stop', 'version'])
      await q.query(`alter table request_log drop column ${column}`);
    await q.query(`alter table sessions drop column version`);
    await q.query(`drop table session_slots`);
    await q.query(`drop table request_views`);
    await q.query(`drop table streams`);
  }
}
