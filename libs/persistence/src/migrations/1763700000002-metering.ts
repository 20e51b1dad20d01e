import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Metering1763700000002 implements MigrationInterface {
  name = 'Metering1763700000002';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `alter table projects add column requests_used integer not null default 0 check (requests_used >= 0)`,
    );
    // One reservation and one settlement per request: the primary key makes both idempotent.
    await q.query(`
      create table credit_ledger (
        request_id uuid not null,
        kind text not null check (kind in ('reserve', 'settle')),
        project_id uuid not null references projects (id) on delete cascade,
        credits integer not null check (credits >= 0),
        created_at timestamptz not null default now(),
        primary key (request_id, kind)
      )`);
    await q.query(`
      create table rate_limit_hits (
        project_id uuid not null,
        at timestamptz not null default clock_timestamp()
      )`);
    await q.query(`create index rate_limit_hits_idx on rate_limit_hits (project_id, at)`);
    // Claim checks: input files and large tool outputs, kept out of workflow histories.
    await q.query(`
      create table blobs (
        id uuid primary key,
        project_id uuid not null references projects (id) on delete cascade,
        name text not null,
        content text not null,
        bytes integer not null,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null
      )`);
    await q.query(`create index blobs_expiry_idx on blobs (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop table blobs`);
    await q.query(`drop table rate_limit_hits`);
    await q.query(`drop table credit_ledger`);
    await q.query(`alter table projects drop column requests_used`);
  }
}
