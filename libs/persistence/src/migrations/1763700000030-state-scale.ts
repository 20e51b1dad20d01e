import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * State that scales (issue 30), the columns and trigger; the indexes that use them follow in
 * 1763700000031, built concurrently. Expand only (docs/decisions.md): two nullable columns the
 * previous release neither reads nor writes, kept current by a trigger and by the projector, so
 * whichever release writes, they stay right.
 */
export class StateScale1763700000030 implements MigrationInterface {
  name = 'StateScale1763700000030';

  async up(q: QueryRunner): Promise<void> {
    // When a request's ledger settled, on both its rows: the reconciler's open-reservation list
    // becomes a partial index (kind = 'reserve' and settled_at is null) instead of a read of every
    // reservation with an anti-join on the settlements. Set by a trigger on the settlement's insert,
    // so a previous release's settlement sets it too. On the settlement's own row as well, so only
    // open reservations have none: the planner then estimates the list at its size and reads the
    // index (with settlements null it took half the ledger for open and scanned it).
    await q.query(`alter table credit_ledger add column settled_at timestamptz`);
    await q.query(`
      create function credit_ledger_settled() returns trigger language plpgsql as $$
      begin
        new.settled_at := coalesce(new.settled_at, new.created_at);
        -- By the primary key (a request has one settlement).
        update credit_ledger set settled_at = new.settled_at where request_id = new.request_id and kind = 'reserve';
        return new;
      end
      $$`);
    await q.query(
      `create trigger credit_ledger_settled before insert on credit_ledger for each row when (new.kind = 'settle') execute function credit_ledger_settled()`,
    );
    await q.query(`
      update credit_ledger l set settled_at = s.created_at from credit_ledger s
       where s.request_id = l.request_id and s.kind = 'settle' and l.settled_at is null`);

    // The stream version the sessions read model reflects, on the session stream's row (written by
    // the projector with the row, apps/projector sessions.projection.ts). GET /v1/sessions brings
    // up to date only the sessions whose row is behind: a partial index of exactly those, instead of
    // every session stream the project ever had (a session pruned from the read model after 30 days
    // counted as behind, and cost one event-store read per list).
    await q.query(`alter table streams add column projected_version integer`);
    // Existing rows: the row's version; a stream without a row whose last event is older than a
    // day was pruned (its version is reflected, and retention removed it); a younger one stays null
    // (behind) until the projector writes its row.
    await q.query(`
      update streams st set projected_version = coalesce(
          (select s.version from sessions s where s.id = substr(st.stream_id, 9)::uuid),
          (select st.version from events e where e.stream_id = st.stream_id and e.version = st.version and e.recorded_at < now() - interval '1 day'))
       where st.stream_id like 'session-%'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`alter table streams drop column projected_version`);
    await q.query(`drop trigger credit_ledger_settled on credit_ledger`);
    await q.query(`drop function credit_ledger_settled()`);
    await q.query(`alter table credit_ledger drop column settled_at`);
  }
}
