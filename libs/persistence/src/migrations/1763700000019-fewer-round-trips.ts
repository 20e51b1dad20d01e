import type { MigrationInterface, QueryRunner } from 'typeorm';

export class FewerRoundTrips1763700000019 implements MigrationInterface {
  name = 'FewerRoundTrips1763700000019';

  async up(q: QueryRunner): Promise<void> {
    // The relay's wake-up (NOTIFY mas_outbox, libs/events OUTBOX_CHANNEL) comes from the insert
    // itself, once per statement, instead of a `select pg_notify` round trip after every enqueue.
    // PostgreSQL delivers it at commit, and folds the notifications of one transaction into one.
    await q.query(`
      create function outbox_notify() returns trigger language plpgsql as $$
      begin
        perform pg_notify('mas_outbox', '');
        return null;
      end
      $$`);
    await q.query(
      `create trigger outbox_notify after insert on outbox for each statement execute function outbox_notify()`,
    );
    // Every money step of libs/metering starts by locking the project row and reading the request's
    // ledger rows. One round trip for both; the ledger is read by a second statement of the
    // function, so under READ COMMITTED it sees what a step that held the lock before committed (a
    // subquery of the locking statement would read the snapshot taken before the wait).
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

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop function lock_project(uuid, uuid)`);
    await q.query(`drop trigger outbox_notify on outbox`);
    await q.query(`drop function outbox_notify()`);
  }
}
