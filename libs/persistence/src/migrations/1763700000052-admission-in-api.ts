import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Admission in the api (DESIGN.md section 10, issue 30) and the per-project caps of issue 28.
 *
 * A reservation now names its pickup deadline (`pickup_by`: the api admitted the request before
 * starting its workflow, and the workflow must take it up by then) and when the workflow took it up
 * (`picked_up_at`); the reconciler releases one not taken up by its deadline. It also keeps what the
 * caps count: the quota counter after it (`requests_used`, for the request's accepted event written
 * at pickup) and the input bytes the request stores (`input_bytes`). A reservation made by a
 * workflow (the previous release, or a request it started) has none of them.
 *
 * `admit_request` decides a request's admission in one statement (one round trip): the project row
 * locked, its billing period rolled over, the quota, the credits, the runs in flight (open
 * reservations) and the input bytes of the last 24 hours checked, and the reservation made; a
 * request admitted already (a retry) is admitted again without a second reservation.
 *
 * Expand only (docs/decisions.md): nullable columns the previous release neither reads nor writes,
 * a new function, and indexes built concurrently (so `transaction = false`; an index a failed run
 * left invalid is dropped and built again).
 */
export class AdmissionInApi1763700000052 implements MigrationInterface {
  name = 'AdmissionInApi1763700000052';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `alter table credit_ledger add column if not exists pickup_by timestamptz, add column if not exists picked_up_at timestamptz, add column if not exists requests_used integer, add column if not exists input_bytes bigint`,
    );
    await q.query(`
      create or replace function admit_request(p_project uuid, p_request uuid, p_credits integer, p_quota integer, p_period_start timestamptz, p_pickup_by timestamptz,
                                               p_input_bytes bigint, p_max_in_flight integer, p_max_bytes_per_day bigint)
        returns table (outcome text, credit_balance integer, requests_used integer, retry_after integer)
      language plpgsql as $$
      #variable_conflict use_column
      declare
        v_balance integer;
        v_used integer;
        v_period timestamptz;
        v_count bigint;
        v_oldest timestamptz;
      begin
        select p.credit_balance, p.requests_used, p.period_start into v_balance, v_used, v_period from projects p where p.id = p_project for update;
        if not found then raise exception 'project % does not exist', p_project; end if;
        if v_period is distinct from p_period_start then
          -- A new billing period: the quota counter starts again.
          update projects set requests_used = 0, period_start = p_period_start where id = p_project;
          v_used := 0;
        end if;
        if exists (select 1 from credit_ledger l where l.request_id = p_request and l.kind = 'reserve') then
          -- Admitted already (a retry with the same Idempotency-Key): a reservation not taken up yet
          -- waits for this attempt's workflow start too.
          update credit_ledger l set pickup_by = greatest(l.pickup_by, p_pickup_by)
           where l.request_id = p_request and l.kind = 'reserve' and l.picked_up_at is null and l.settled_at is null and l.pickup_by is not null;
          return query select 'admitted'::text, v_balance, v_used, 0;
          return;
        end if;
        if v_used >= p_quota then
          return query select 'quota_exceeded'::text, v_balance, v_used, 0;
          return;
        end if;
        if v_balance < p_credits then
          return query select 'insufficient_credits'::text, v_balance, v_used, 0;
          return;
        end if;
        if p_input_bytes > p_max_bytes_per_day then
          return query select 'input_too_large'::text, v_balance, v_used, 0;
          return;
        end if;
        select count(*) into v_count from credit_ledger l where l.project_id = p_project and l.kind = 'reserve' and l.settled_at is null;
        if v_count >= p_max_in_flight then
          return query select 'runs_in_flight'::text, v_balance, v_used, 1;
          return;
        end if;
        if p_input_bytes > 0 then
          select coalesce(sum(l.input_bytes), 0), min(l.created_at) into v_count, v_oldest from credit_ledger l
           where l.project_id = p_project and l.kind = 'reserve' and l.input_bytes > 0 and l.created_at > now() - interval '1 day';
          if v_count + p_input_bytes > p_max_bytes_per_day then
            -- Until the oldest counted bytes leave the window (more may have to).
            return query select 'input_bytes_per_day'::text, v_balance, v_used, greatest(1, ceil(extract(epoch from v_oldest + interval '1 day' - now())))::integer;
            return;
          end if;
        end if;
        update projects set credit_balance = credit_balance - p_credits, requests_used = v_used + 1 where id = p_project;
        v_balance := v_balance - p_credits;
        v_used := v_used + 1;
        insert into credit_ledger (request_id, kind, project_id, credits, balance_after, reason, pickup_by, requests_used, input_bytes)
          values (p_request, 'reserve', p_project, p_credits, v_balance, 'admission', p_pickup_by, v_used, p_input_bytes);
        return query select 'admitted'::text, v_balance, v_used, 0;
      end
      $$`);
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
    await q.query(
      `drop function if exists admit_request(uuid, uuid, integer, integer, timestamptz, timestamptz, bigint, integer, bigint)`,
    );
    await q.query(
      `alter table credit_ledger drop column if exists input_bytes, drop column if exists requests_used, drop column if exists picked_up_at, drop column if exists pickup_by`,
    );
  }
}

const INDEXES: readonly (readonly [string, string])[] = [
  // The runs in flight of a project: its open reservations.
  ['credit_ledger_open_project_idx', `credit_ledger (project_id) where kind = 'reserve' and settled_at is null`],
  // The input bytes a project stored in the last 24 hours.
  [
    'credit_ledger_input_bytes_idx',
    `credit_ledger (project_id, created_at) where kind = 'reserve' and input_bytes > 0`,
  ],
];
