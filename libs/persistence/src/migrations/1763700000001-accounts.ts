import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Accounts1763700000001 implements MigrationInterface {
  name = 'Accounts1763700000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      create table projects (
        id uuid primary key,
        name text not null unique,
        plan text not null check (plan in ('free', 'starter', 'pro')),
        capabilities text[] not null default '{}',
        credit_balance integer not null default 0 check (credit_balance >= 0),
        credits_purchased boolean not null default false,
        period_start timestamptz not null,
        created_at timestamptz not null default now()
      )`);
    await q.query(`
      create table api_keys (
        id uuid primary key,
        project_id uuid not null references projects (id) on delete cascade,
        key_hash bytea not null unique,
        prefix text not null,
        label text,
        created_at timestamptz not null default now(),
        revoked_at timestamptz
      )`);
    await q.query(`create index api_keys_project_idx on api_keys (project_id)`);
    await q.query(`
      create table model_configs (
        project_id uuid primary key references projects (id) on delete cascade,
        provider text not null check (provider in ('openai', 'anthropic', 'scripted')),
        model text not null,
        base_url text,
        key_ciphertext bytea,
        updated_at timestamptz not null default now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop table model_configs`);
    await q.query(`drop table api_keys`);
    await q.query(`drop table projects`);
  }
}
