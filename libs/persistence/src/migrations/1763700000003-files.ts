import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Files1763700000003 implements MigrationInterface {
  name = 'Files1763700000003';

  async up(q: QueryRunner): Promise<void> {
    // Files the agent generated, kept by reference (never in workflow histories) and served by
    // GET /v1/files/{id} until they expire.
    await q.query(`
      create table generated_files (
        id uuid primary key,
        project_id uuid not null references projects (id) on delete cascade,
        request_id uuid not null,
        name text not null,
        media_type text not null,
        encoding text not null check (encoding in ('utf8', 'base64')),
        content text not null,
        bytes integer not null,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null
      )`);
    await q.query(`create index generated_files_expiry_idx on generated_files (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop table generated_files`);
  }
}
