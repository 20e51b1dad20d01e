import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The console against hostile tenants (issue 44; DESIGN.md section 11, "console roles",
 * "invitations and links", "sign-in throttle"; docs/security.md). Expand only:
 * - roles `developer` and `viewer` beside `owner` (`member`, the previous release's one other
 *   role, is read as `developer`; the previous release reads any role it does not know as a
 *   member, and never writes the new ones);
 * - invitations as pending memberships, accepted with their own link by the account they name;
 * - links bound to a purpose: `invite` (a new account's first password and its invitation),
 *   `accept` (an existing account accepts an invitation after signing in), `reset`;
 * - the sign-in attempts, counted (atomically) before the password is checked;
 * - the keys the console issued, with who issued them (a developer revokes their own);
 * - the project's audit log: every change made in the console or with the operator CLI.
 */
export class ConsoleRoles1763700000055 implements MigrationInterface {
  name = 'ConsoleRoles1763700000055';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`alter table console_members drop constraint if exists console_members_role_check`);
    await q.query(
      `alter table console_members add constraint console_members_role_check check (role in ('owner', 'member', 'developer', 'viewer'))`,
    );
    await q.query(`
      create table console_invitations (
        id uuid primary key,
        project_id uuid not null references projects (id) on delete cascade,
        user_id uuid not null references console_users (id) on delete cascade,
        role text not null check (role in ('owner', 'developer', 'viewer')),
        invited_by uuid references console_users (id) on delete set null,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null,
        accepted_at timestamptz,
        revoked_at timestamptz
      )`);
    await q.query(`create index console_invitations_user_idx on console_invitations (user_id)`);
    await q.query(`alter table console_links drop constraint if exists console_links_kind_check`);
    await q.query(
      `alter table console_links add constraint console_links_kind_check check (kind in ('invite', 'accept', 'reset'))`,
    );
    await q.query(
      `alter table console_links add column invitation_id uuid references console_invitations (id) on delete cascade`,
    );
    await q.query(`create index console_links_user_idx on console_links (user_id) where used_at is null`);
    // One row per email and per client address: an attempt takes its number under the row's lock
    // before the password is checked, so concurrent attempts cannot all be the first.
    await q.query(`
      create table console_signin_counters (
        scope text primary key,
        window_started_at timestamptz not null,
        attempts integer not null
      )`);
    // Counters whose window ended long ago are deleted (at most once a minute per console).
    await q.query(`create index console_signin_counters_window_idx on console_signin_counters (window_started_at)`);
    await q.query(`
      create table console_key_issuers (
        key_id uuid primary key references api_keys (id) on delete cascade,
        user_id uuid not null references console_users (id) on delete cascade
      )`);
    await q.query(`
      create table audit_log (
        id bigserial primary key,
        project_id uuid not null references projects (id) on delete cascade,
        at timestamptz not null default now(),
        actor text not null,
        address text,
        action text not null,
        target text,
        detail jsonb not null default '{}'::jsonb
      )`);
    await q.query(`create index audit_log_project_idx on audit_log (project_id, id desc)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop table audit_log`);
    await q.query(`drop table console_key_issuers`);
    await q.query(`drop table console_signin_counters`);
    await q.query(`alter table console_links drop column invitation_id`);
    await q.query(`delete from console_links where kind = 'accept'`);
    await q.query(`alter table console_links drop constraint console_links_kind_check`);
    await q.query(
      `alter table console_links add constraint console_links_kind_check check (kind in ('invite', 'reset'))`,
    );
    await q.query(`drop table console_invitations`);
    await q.query(`update console_members set role = 'member' where role in ('developer', 'viewer')`);
    await q.query(`alter table console_members drop constraint console_members_role_check`);
    await q.query(
      `alter table console_members add constraint console_members_role_check check (role in ('owner', 'member'))`,
    );
  }
}
