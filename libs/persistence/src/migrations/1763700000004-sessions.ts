import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Sessions1763700000004 implements MigrationInterface {
  name = 'Sessions1763700000004';

  async up(q: QueryRunner): Promise<void> {
    // The sessions read model: the api counts active sessions here (under a per-project advisory
    // lock) and answers GET /v1/sessions; the session workflow keeps each row current.
    await q.query(`
      create table sessions (
        id uuid primary key,
        project_id uuid not null references projects (id) on delete cascade,
        status text not null check (status in ('active', 'expired', 'ended')),
        message_count integer not null default 0 check (message_count >= 0),
        created_at timestamptz not null,
        last_activity_at timestamptz not null,
        expires_at timestamptz not null,
        revision integer not null default 0
      )`);
    // Newest first with a (created_at, id) cursor; the partial index serves the limit count.
    await q.query(`create index sessions_project_created_idx on sessions (project_id, created_at desc, id desc)`);
    await q.query(`create index sessions_project_active_idx on sessions (project_id) where status = 'active'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop table sessions`);
  }
}
