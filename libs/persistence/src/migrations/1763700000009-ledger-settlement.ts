import type { MigrationInterface, QueryRunner } from 'typeorm';

export class LedgerSettlement1763700000009 implements MigrationInterface {
  name = 'LedgerSettlement1763700000009';

  async up(q: QueryRunner): Promise<void> {
    // A settlement remembers which stop made it (null: a release by the workflow's clean-up or the
    // reconciler) and the balance right after it, so a retried settlement answers exactly as the
    // first did. `reason` says who settled.
    await q.query(`alter table credit_ledger add column stop integer`);
    await q.query(`alter table credit_ledger add column balance_after integer`);
    await q.query(
      `alter table credit_ledger add column reason text not null default 'stop' check (reason in ('admission', 'stop', 'release', 'reconciled'))`,
    );
    await q.query(`update credit_ledger set reason = 'admission' where kind = 'reserve'`);
    // The reconciler looks for reservations without a settlement.
    await q.query(`create index credit_ledger_reserve_idx on credit_ledger (created_at) where kind = 'reserve'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop index credit_ledger_reserve_idx`);
    await q.query(`alter table credit_ledger drop column reason`);
    await q.query(`alter table credit_ledger drop column balance_after`);
    await q.query(`alter table credit_ledger drop column stop`);
  }
}
