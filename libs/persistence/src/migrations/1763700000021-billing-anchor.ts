import type { MigrationInterface, QueryRunner } from 'typeorm';

export class BillingAnchor1763700000021 implements MigrationInterface {
  name = 'BillingAnchor1763700000021';

  async up(q: QueryRunner): Promise<void> {
    // lock_project also returns the project's created_at: billing periods are anchored on the day
    // the project was created, not on the last period's start (which a short month clamps: a
    // project created on the 31st drifted to the 28th for good). Expand only: the previous release
    // selects the columns it knows by name.
    await q.query(`drop function lock_project(uuid, uuid)`);
    await q.query(`
      create function lock_project(p_project uuid, p_request uuid)
        returns table (credit_balance integer, requests_used integer, period_start timestamptz, ledger json, created_at timestamptz)
      language plpgsql as $$
      begin
        perform 1 from projects p where p.id = p_project for update;
        return query
          select p.credit_balance, p.requests_used, p.period_start,
                 (select json_agg(json_build_object('kind', l.kind, 'credits', l.credits, 'stop', l.stop, 'balance_after', l.balance_after))
                    from credit_ledger l where l.request_id = p_request),
                 p.created_at
            from projects p where p.id = p_project;
      end
      $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop function lock_project(uuid, uuid)`);
    await q.query(`
      create function lock_project(p_project uuid, p_request uuid)
        returns table (credit_balance integer, requests_used integer, period_start timestamptz, ledger json)
      language plpgsql as $$
      begin
        perform 1 from projects p where p.id = p_project for update;
        return query
          select p.credit_balance, p.requests_used, p.period_start,
                 (select json_agg(json_build_object('kind', l.kind, 'credits', l.credits, 'stop', l.stop, 'balance_after', l.balance_after))
                    from credit_ledger l where l.request_id = p_request)
            from projects p where p.id = p_project;
      end
      $$`);
  }
}
