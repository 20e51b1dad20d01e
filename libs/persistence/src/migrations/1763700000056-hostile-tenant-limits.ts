import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Three limits of issue 44 (hostile tenants), each decided by PostgreSQL under one lock.
 *
 * Stored bytes of tool outputs. Outputs over 4 KB are stored (blobs) like a request's input files,
 * but only admission counted bytes (credit_ledger.input_bytes). `tool_output_bytes` keeps what each
 * tool-outputs submission stored, and `stored_bytes_of_day` sums both for the cap on input bytes a
 * day: `admit_request` and `count_tool_output_bytes` (a submission's check and count, under the
 * project row's lock that admission takes, so concurrent submissions cannot all pass) read it. A
 * refused submission's row is deleted with its blobs, as a refused session message's reservation is.
 *
 * The billing period. `billing_period_start` is the period PostgreSQL's clock (`now()`) is in, for
 * periods anchored on the day the project was created (libs/metering billing-period.ts, the same
 * arithmetic: PostgreSQL's month addition clamps to a shorter month's last day from the anchor).
 * `lock_project` and `admit_request` roll a project's period over with it, and only forward: a
 * period once begun never goes back (each replica's own clock decided before, and a replica whose
 * clock ran ahead and one behind flipped the period back and forth, zeroing the quota counter).
 * `admit_request` keeps its `p_period_start` argument for the previous release and ignores it.
 *
 * The rate limit's Retry-After. A refused request is counted (DESIGN.md section 7) at the moment its
 * Retry-After names, together with a reserved hit for its retry: the earliest whole second at which
 * two more hits leave every sliding minute at 60 or fewer. A request admitted afresh is admitted
 * only when every minute it falls in, those with promised retries included, stays at 60 or fewer;
 * one that would not be, arriving once a reserved hit's moment has come, takes that reserved hit.
 * So neither other clients' refusals nor their admissions push a promised retry out. Past 120
 * promised hits outstanding (a flood), a refusal gets no place and is not counted: its Retry-After
 * is when every counted hit has left, and the table and the statement's work stay bounded. The function
 * keeps its name and its columns `n` and `oldest` (the previous release decides `n < 60` and
 * computes Retry-After from `oldest`, which is the promised moment less 60 s) and answers
 * `retry_after` too; `p_now` (default `clock_timestamp()`) lets a test drive the clock.
 *
 * Expand only: a new table, a column with a default, functions replaced with the same arguments and
 * result columns (the rate limit's gains one more result column and a defaulted argument).
 */
export class HostileTenantLimits1763700000056 implements MigrationInterface {
  name = 'HostileTenantLimits1763700000056';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      create table if not exists tool_output_bytes (
        id uuid primary key,
        project_id uuid not null references projects (id) on delete cascade,
        bytes bigint not null check (bytes > 0),
        created_at timestamptz not null default now()
      )`);
    await q.query(`create index if not exists tool_output_bytes_idx on tool_output_bytes (project_id, created_at)`);
    await q.query(`
      create or replace function stored_bytes_of_day(p_project uuid) returns table (bytes bigint, oldest timestamptz)
      language sql stable as $$
        select coalesce(sum(b), 0)::bigint, min(at) from (
          select l.input_bytes b, l.created_at at from credit_ledger l
           where l.project_id = p_project and l.kind = 'reserve' and l.input_bytes > 0 and l.created_at > now() - interval '1 day'
          union all
          select t.bytes, t.created_at from tool_output_bytes t where t.project_id = p_project and t.created_at > now() - interval '1 day'
        ) s
      $$`);
    await q.query(`
      create or replace function count_tool_output_bytes(p_project uuid, p_id uuid, p_bytes bigint, p_max_bytes_per_day bigint)
        returns table (outcome text, retry_after integer)
      language plpgsql as $$
      declare
        v_count bigint;
        v_oldest timestamptz;
      begin
        perform 1 from projects p where p.id = p_project for update;
        if not found then raise exception 'project % does not exist', p_project; end if;
        if p_bytes > p_max_bytes_per_day then
          return query select 'input_too_large'::text, 0;
          return;
        end if;
        select s.bytes, s.oldest into v_count, v_oldest from stored_bytes_of_day(p_project) s;
        if v_count + p_bytes > p_max_bytes_per_day then
          return query select 'input_bytes_per_day'::text, greatest(1, ceil(extract(epoch from v_oldest + interval '1 day' - now())))::integer;
          return;
        end if;
        insert into tool_output_bytes (id, project_id, bytes) values (p_id, p_project, p_bytes);
        return query select 'counted'::text, 0;
      end
      $$`);

    await q.query(`
      create or replace function billing_period_start(p_created_at timestamptz, p_now timestamptz) returns timestamptz
      language plpgsql stable as $$
      declare
        v_anchor timestamp := date_trunc('day', p_created_at at time zone 'UTC');
        v_now timestamp := p_now at time zone 'UTC';
        v_months integer := (extract(year from v_now) - extract(year from v_anchor))::integer * 12
                            + (extract(month from v_now) - extract(month from v_anchor))::integer;
        v_start timestamp := v_anchor + make_interval(months => v_months);
      begin
        if v_start > v_now then v_start := v_anchor + make_interval(months => v_months - 1); end if;
        return v_start at time zone 'UTC';
      end
      $$`);
    await q.query(`
      create or replace function lock_project(p_project uuid, p_request uuid)
        returns table (credit_balance integer, requests_used integer, period_start timestamptz, ledger json, created_at timestamptz)
      language plpgsql as $$
      begin
        perform 1 from projects p where p.id = p_project for update;
        -- The period PostgreSQL's clock is in, and only forward: the quota counter starts again.
        update projects p set requests_used = 0, period_start = billing_period_start(p.created_at, now())
         where p.id = p_project and p.period_start < billing_period_start(p.created_at, now());
        return query
          select p.credit_balance, p.requests_used, p.period_start,
                 (select json_agg(json_build_object('kind', l.kind, 'credits', l.credits, 'stop', l.stop, 'balance_after', l.balance_after))
                    from credit_ledger l where l.request_id = p_request),
                 p.created_at
            from projects p where p.id = p_project;
      end
      $$`);
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
        v_start timestamptz;
        v_count bigint;
        v_oldest timestamptz;
      begin
        -- p_period_start (each api replica's clock) is not used: PostgreSQL's clock decides.
        select p.credit_balance, p.requests_used, p.period_start, billing_period_start(p.created_at, now())
          into v_balance, v_used, v_period, v_start from projects p where p.id = p_project for update;
        if not found then raise exception 'project % does not exist', p_project; end if;
        if v_start > v_period then
          -- A new billing period: the quota counter starts again. Never back to an earlier one.
          update projects set requests_used = 0, period_start = v_start where id = p_project;
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
          -- The input files of requests and the stored tool outputs of the last 24 hours.
          select s.bytes, s.oldest into v_count, v_oldest from stored_bytes_of_day(p_project) s;
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

    await q.query(`alter table rate_limit_hits add column if not exists reserved boolean not null default false`);
    await q.query(`drop function if exists rate_limit_hit(text)`);
    await q.query(`
      create or replace function rate_limit_hit(p_project text, p_now timestamptz default clock_timestamp())
        returns table (n bigint, oldest timestamptz, retry_after integer)
      language plpgsql as $$
      declare
        v_project uuid := p_project::uuid;
        v_need bigint;
        v_s integer;
        v_at timestamptz;
      begin
        perform pg_advisory_xact_lock(hashtextextended(p_project, 0));
        delete from rate_limit_hits h where h.project_id = v_project and h.at < p_now - interval '60 seconds';
        -- A hit now falls in every minute [x - 60 s, x] with x in [now, now + 60 s]: the fullest of
        -- them is the one ending now or one ending at a later (promised) hit.
        select max(c) into v_need from (
          select count(*) c from rate_limit_hits h where h.project_id = v_project and h.at <= p_now
          union all
          select (select count(*) from rate_limit_hits h where h.project_id = v_project and h.at between f.at - interval '60 seconds' and f.at)
            from rate_limit_hits f where f.project_id = v_project and f.at > p_now and f.at <= p_now + interval '60 seconds'
        ) w;
        if v_need < ${LIMIT} then
          insert into rate_limit_hits (project_id, at) values (v_project, p_now);
          return query select v_need, null::timestamptz, 0;
          return;
        end if;
        -- A retry whose promised moment has come takes the hit reserved for it.
        select h.at into v_at from rate_limit_hits h
         where h.project_id = v_project and h.reserved and h.at <= p_now order by h.at limit 1;
        if found then
          update rate_limit_hits h set reserved = false
           where h.ctid = (select ctid from rate_limit_hits r where r.project_id = v_project and r.reserved and r.at = v_at limit 1);
          return query select ${LIMIT - 1}::bigint, null::timestamptz, 0;
          return;
        end if;
        -- A flood (this many promised hits outstanding): refused without a place, told when every
        -- counted hit has left, and not counted, so neither the table nor this statement's work
        -- grows with the flood, and the places promised before stay.
        if (select count(*) from rate_limit_hits h where h.project_id = v_project and h.at > p_now) >= ${2 * LIMIT} then
          select max(h.at) into v_at from rate_limit_hits h where h.project_id = v_project;
          v_s := floor(extract(epoch from v_at + interval '60 seconds' - p_now))::integer + 1;
          return query select v_need, p_now + make_interval(secs => v_s) - interval '60 seconds', v_s;
          return;
        end if;
        -- Refused: counted at the earliest whole second s at which this hit and its retry's keep every
        -- minute they fall in at ${LIMIT} or fewer. That can only become true when a hit leaves the
        -- minute, so only those seconds (and 1) are tried.
        with hits as (
          select h.at, count(*) over (order by h.at range between interval '60 seconds' preceding and current row) c
            from rate_limit_hits h where h.project_id = v_project
        ), tries as (
          select 1 s
          union
          select floor(extract(epoch from h.at + interval '60 seconds' - p_now))::integer + 1 from hits h where h.at + interval '60 seconds' >= p_now
        )
        select min(t.s) into v_s from tries t
         where (select count(*) from hits h where h.at between p_now + make_interval(secs => t.s) - interval '60 seconds' and p_now + make_interval(secs => t.s)) <= ${LIMIT - 2}
           and coalesce((select max(h.c) from hits h where h.at > p_now + make_interval(secs => t.s) and h.at <= p_now + make_interval(secs => t.s) + interval '60 seconds'), 0) <= ${LIMIT - 2};
        v_at := p_now + make_interval(secs => v_s);
        insert into rate_limit_hits (project_id, at, reserved) values (v_project, v_at, false), (v_project, v_at, true);
        return query select v_need, v_at - interval '60 seconds', v_s;
      end
      $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop function if exists rate_limit_hit(text, timestamptz)`);
    await q.query(`
      create function rate_limit_hit(p_project text) returns table (n bigint, oldest timestamptz)
      language plpgsql as $$
      begin
        perform pg_advisory_xact_lock(hashtextextended(p_project, 0));
        delete from rate_limit_hits where project_id = p_project::uuid and at < clock_timestamp() - interval '60 seconds';
        return query select count(*), min(h.at) from rate_limit_hits h where h.project_id = p_project::uuid;
        insert into rate_limit_hits (project_id) values (p_project::uuid);
      end
      $$`);
    await q.query(`alter table rate_limit_hits drop column if exists reserved`);
    // admit_request and lock_project as migrations 1763700000052 and 1763700000021 made them.
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
    await q.query(`
      create or replace function lock_project(p_project uuid, p_request uuid)
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
    await q.query(`drop function if exists count_tool_output_bytes(uuid, uuid, bigint, bigint)`);
    await q.query(`drop function if exists billing_period_start(timestamptz, timestamptz)`);
    await q.query(`drop function if exists stored_bytes_of_day(uuid)`);
    await q.query(`drop table if exists tool_output_bytes`);
  }
}

/** Requests per sliding minute per project (libs/metering RATE_LIMIT_PER_MINUTE). */
const LIMIT = 60;
