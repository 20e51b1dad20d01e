import type { MigrationInterface, QueryRunner } from 'typeorm';

export class LedgerChecked1763700000013 implements MigrationInterface {
  name = 'LedgerChecked1763700000013';

  async up(q: QueryRunner): Promise<void> {
    // When the reconciler last found a reservation's workflow still running: it looks at the
    // never-checked and longest-unchecked first, so long runs never starve the others.
    await q.query(`alter table credit_ledger add column checked_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`alter table credit_ledger drop column checked_at`);
  }
}
