import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Each index: its name, and what follows `on`. */
const INDEXES: readonly (readonly [string, string])[] = [
  // GET /v1/sessions: the project's session streams whose read-model row is behind (1763700000030).
  [
    'streams_sessions_behind_idx',
    `streams (project_id) where stream_id like 'session-%' and (projected_version is null or projected_version < version)`,
  ],
  // The reconciler: open reservations, never checked first, then the longest unchecked.
  [
    'credit_ledger_open_idx',
    `credit_ledger (checked_at nulls first, created_at) where kind = 'reserve' and settled_at is null`,
  ],
  // GET /v1/agent/{id} and webhook renders: a request's generated files.
  ['generated_files_request_idx', `generated_files (request_id)`],
  // Retention (apps/relay/src/retention.ts): the column each rule filters on.
  ['outbox_published_idx', `outbox (published_at) where published_at is not null`],
  ['projection_processed_processed_idx', `projection_processed (processed_at)`],
  ['sessions_closed_expiry_idx', `sessions (expires_at) where status <> 'active'`],
  ['webhook_deliveries_finished_idx', `webhook_deliveries (finished_at) where status <> 'pending'`],
  ['credit_ledger_settled_created_idx', `credit_ledger (created_at) where kind = 'settle'`],
];

/**
 * The indexes of state that scales (issue 30), built with `create index concurrently`: writes to
 * these tables go on while each is built, so the migration runs outside a transaction
 * (`transaction = false`, which TypeORM honours in the 'each' mode the service migrates in). An
 * index a failed run left invalid is dropped and built again. Expand only: the previous release
 * does not notice an index.
 */
export class StateScaleIndexes1763700000031 implements MigrationInterface {
  name = 'StateScaleIndexes1763700000031';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    for (const [name, on] of INDEXES) {
      const invalid: unknown[] = await q.query(
        `select 1 from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = $1 and not i.indisvalid`,
        [name],
      );
      if (invalid.length) await q.query(`drop index concurrently ${name}`);
      await q.query(`create index concurrently if not exists ${name} on ${on}`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const [name] of [...INDEXES].reverse()) await q.query(`drop index if exists ${name}`);
  }
}
