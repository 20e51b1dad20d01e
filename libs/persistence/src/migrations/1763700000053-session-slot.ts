import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A session's slot in one round trip (issue 30: creating a session took 9 PostgreSQL round trips,
 * 4 of them the slot): the project's lock, the check that the session's stream is new, the count
 * of the project's slots and the slot's insert, in one function. 'taken', 'exists' (a retry of a
 * creation that committed) or 'limit'. Expand only: the previous release does not call it.
 */
export class SessionSlot1763700000053 implements MigrationInterface {
  name = 'SessionSlot1763700000053';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      create function take_session_slot(p_session_id uuid, p_project_id uuid, p_created_at timestamptz, p_limit integer)
      returns text language plpgsql as $$
      begin
        perform pg_advisory_xact_lock(hashtextextended('sessions:' || p_project_id::text, 0));
        if exists (select 1 from streams where stream_id = 'session-' || p_session_id::text and version > 0) then
          return 'exists';
        end if;
        if (select count(*) from session_slots where project_id = p_project_id) >= p_limit then
          return 'limit';
        end if;
        insert into session_slots (session_id, project_id, created_at) values (p_session_id, p_project_id, p_created_at);
        return 'taken';
      end $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop function take_session_slot(uuid, uuid, timestamptz, integer)`);
  }
}
