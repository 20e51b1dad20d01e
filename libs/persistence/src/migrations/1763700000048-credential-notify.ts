import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The api's cache of API keys and the worker's cache of model credentials (libs/accounts, DESIGN.md
 * section 10 "caches") hear every change on the process's one listener. The writes themselves
 * notify, at commit, so the CLI, the console and any other writer invalidate without code of their
 * own:
 * - `mas_api_key`, payload the key's id: a key revoked, deleted, or stored under another hash or
 *   project (the minutely `last_used_at` stamp does not notify). An issued key needs none: an
 *   unknown key is never cached.
 * - `mas_model_config`, payload the project id: a project's model configuration set, changed
 *   (a key rotated, secrets re-encrypted under a new master key) or deleted.
 * Expand only: the previous release neither listens nor minds.
 */
export class CredentialNotify1763700000048 implements MigrationInterface {
  name = 'CredentialNotify1763700000048';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      create function api_key_notify() returns trigger language plpgsql as $$
      begin
        perform pg_notify('mas_api_key', old.id::text);
        return null;
      end
      $$`);
    await q.query(`
      create trigger api_key_changed_notify after update on api_keys for each row
        when (old.revoked_at is distinct from new.revoked_at or old.key_hash is distinct from new.key_hash or old.project_id is distinct from new.project_id or old.id is distinct from new.id)
        execute function api_key_notify()`);
    await q.query(
      `create trigger api_key_deleted_notify after delete on api_keys for each row execute function api_key_notify()`,
    );
    await q.query(`
      create function model_config_notify() returns trigger language plpgsql as $$
      begin
        perform pg_notify('mas_model_config', coalesce(new.project_id, old.project_id)::text);
        if tg_op = 'UPDATE' and new.project_id is distinct from old.project_id then
          perform pg_notify('mas_model_config', old.project_id::text);
        end if;
        return null;
      end
      $$`);
    await q.query(
      `create trigger model_config_notify after insert or update or delete on model_configs for each row execute function model_config_notify()`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop trigger model_config_notify on model_configs`);
    await q.query(`drop function model_config_notify()`);
    await q.query(`drop trigger api_key_deleted_notify on api_keys`);
    await q.query(`drop trigger api_key_changed_notify on api_keys`);
    await q.query(`drop function api_key_notify()`);
  }
}
