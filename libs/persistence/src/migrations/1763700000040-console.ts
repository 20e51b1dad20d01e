import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Console1763700000040 implements MigrationInterface {
  name = 'Console1763700000040';

  async up(q: QueryRunner): Promise<void> {
    // The customer console's accounts (DESIGN.md section 10, "customer console"; docs/console.md).
    // Expand only: new tables and one nullable column, which the previous release neither reads
    // nor writes. A user has no password until an invitation link is redeemed.
    await q.query(`
      create table console_users (
        id uuid primary key,
        email text not null unique check (email = lower(email)),
        password_hash text,
        created_at timestamptz not null default now()
      )`);
    await q.query(`
      create table console_members (
        project_id uuid not null references projects (id) on delete cascade,
        user_id uuid not null references console_users (id) on delete cascade,
        role text not null check (role in ('owner', 'member')),
        created_at timestamptz not null default now(),
        primary key (project_id, user_id)
      )`);
    await q.query(`create index console_members_user_idx on console_members (user_id)`);
    // One-time links (invitations, password resets): only the SHA-256 of the token is stored.
    await q.query(`
      create table console_links (
        token_hash bytea primary key,
        kind text not null check (kind in ('invite', 'reset')),
        user_id uuid not null references console_users (id) on delete cascade,
        expires_at timestamptz not null,
        used_at timestamptz,
        created_at timestamptz not null default now()
      )`);
    // Signed-in sessions, server-side so they can be revoked; the cookie holds the token, the row its SHA-256.
    await q.query(`
      create table console_sessions (
        id uuid primary key,
        token_hash bytea not null unique,
        user_id uuid not null references console_users (id) on delete cascade,
        csrf_token text not null,
        user_agent text,
        created_at timestamptz not null default now(),
        last_seen_at timestamptz not null default now(),
        expires_at timestamptz not null,
        revoked_at timestamptz
      )`);
    await q.query(`create index console_sessions_user_idx on console_sessions (user_id)`);
    // Failed sign-ins, per email and per client address, for throttling.
    await q.query(`
      create table console_signin_failures (
        scope text not null,
        at timestamptz not null default now()
      )`);
    await q.query(`create index console_signin_failures_idx on console_signin_failures (scope, at)`);
    // When a key last authenticated a request (written at most once a minute per key).
    await q.query(`alter table api_keys add column last_used_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`alter table api_keys drop column last_used_at`);
    for (const table of [
      'console_signin_failures',
      'console_sessions',
      'console_links',
      'console_members',
      'console_users',
    ])
      await q.query(`drop table ${table}`);
  }
}
