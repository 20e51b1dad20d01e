import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A secret the console shows once after a redirect (a new API key: the POST issues it and
 * redirects, the page it redirects to shows it; docs/console.md), kept for the console session
 * that made it, sealed with the master key, for one read within minutes. Expand only: the
 * previous release neither writes nor reads the table.
 */
export class ConsoleReveals1763700000057 implements MigrationInterface {
  name = 'ConsoleReveals1763700000057';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      create table console_reveals (
        session_id uuid not null references console_sessions(id) on delete cascade,
        kind text not null,
        sealed bytea not null,
        expires_at timestamptz not null,
        primary key (session_id, kind)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop table console_reveals`);
  }
}
