import type { MigrationInterface, QueryRunner } from 'typeorm';

export class RateLimitFunction1763700000018 implements MigrationInterface {
  name = 'RateLimitFunction1763700000018';

  async up(q: QueryRunner): Promise<void> {
    // The rate limit's step in one round trip (it was a transaction of four statements, on every
    // request): the project's advisory lock, the sliding minute pruned, counted, and this hit added.
    // Returns the hits before this one and the oldest of them.
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
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop function rate_limit_hit(text)`);
  }
}
