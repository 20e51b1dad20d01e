import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sessions ended from the console (docs/console.md): the console never talks to Temporal, so it
 * records the request here and a worker sends the session workflow the same end Update that the
 * api's DELETE /v1/sessions/{id} sends, then deletes the row. A row stays until that is done, so
 * a crash of either side loses nothing. Expand only: the previous release neither writes nor
 * reads the table.
 */
export class SessionEndRequests1763700000051 implements MigrationInterface {
  name = 'SessionEndRequests1763700000051';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      create table session_end_requests (
        session_id uuid primary key,
        project_id uuid not null references projects(id) on delete cascade,
        requested_at timestamptz not null default now(),
        attempts integer not null default 0,
        last_error text
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop table session_end_requests`);
  }
}
