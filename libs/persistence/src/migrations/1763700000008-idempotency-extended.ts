import type { MigrationInterface, QueryRunner } from 'typeorm';

export class IdempotencyExtended1763700000008 implements MigrationInterface {
  name = 'IdempotencyExtended1763700000008';

  async up(q: QueryRunner): Promise<void> {
    // Idempotency-Key on every POST (DESIGN.md section 9): a key is bound to its endpoint as well as
    // its body, and the saved answer is the whole answer (status, headers, body), failures included.
    await q.query(`alter table idempotency_keys add column endpoint text not null default 'POST /v1/agent'`);
    await q.query(`alter table idempotency_keys alter column endpoint drop default`);
    await q.query(
      `update idempotency_keys set response = jsonb_build_object('status', 200, 'headers', jsonb_build_object('X-Request-Id', request_id::text), 'body', response) where response is not null`,
    );
    // Keys past their window are deleted by age (apps/relay/src/retention.ts).
    await q.query(`create index idempotency_keys_created_idx on idempotency_keys (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop index idempotency_keys_created_idx`);
    await q.query(
      `update idempotency_keys set response = case when (response ->> 'status')::int = 200 then response -> 'body' end where response is not null`,
    );
    await q.query(`alter table idempotency_keys drop column endpoint`);
  }
}
