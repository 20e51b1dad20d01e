import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Idempotency1763700000007 implements MigrationInterface {
  name = 'Idempotency1763700000007';

  async up(q: QueryRunner): Promise<void> {
    // Idempotency-Key on POST /v1/agent: scoped to the project, kept 24 hours.
    await q.query(`
      create table idempotency_keys (
        project_id uuid not null references projects (id) on delete cascade,
        key text not null,
        body_hash text not null,
        request_id uuid not null,
        response jsonb,
        created_at timestamptz not null default now(),
        primary key (project_id, key)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop table idempotency_keys`);
  }
}
