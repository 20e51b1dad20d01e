import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Webhooks1763700000014 implements MigrationInterface {
  name = 'Webhooks1763700000014';

  async up(q: QueryRunner): Promise<void> {
    // A project's webhook endpoints. The `whsec_` secret is stored AES-256-GCM encrypted under
    // MAS_MASTER_KEY, bound to the subscription id; it is shown once, at `webhook add`.
    await q.query(`
      create table webhook_subscriptions (
        id uuid primary key,
        project_id uuid not null references projects(id) on delete cascade,
        url text not null,
        events text[] not null,
        secret_ciphertext bytea not null,
        created_at timestamptz not null default now()
      )`);
    await q.query(`create index webhook_subscriptions_project on webhook_subscriptions (project_id)`);
    // One row per (event, subscription): its id is derived from both, so a redelivered event
    // finds its row and starts nothing twice. The body is fixed when the event is dispatched,
    // so every attempt sends (and signs) the same bytes. No foreign key to the subscription:
    // the deliveries of a removed endpoint stay listed.
    await q.query(`
      create table webhook_deliveries (
        id uuid primary key,
        subscription_id uuid not null,
        project_id uuid not null,
        event_id uuid not null,
        event_type text not null,
        body text not null,
        status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
        created_at timestamptz not null default now(),
        finished_at timestamptz,
        unique (event_id, subscription_id)
      )`);
    await q.query(`create index webhook_deliveries_project on webhook_deliveries (project_id, created_at desc)`);
    // Every attempt of a delivery (the activity's attempt number), with what the receiver answered.
    await q.query(`
      create table webhook_attempts (
        delivery_id uuid not null references webhook_deliveries(id) on delete cascade,
        attempt integer not null,
        attempted_at timestamptz not null default now(),
        status_code integer,
        error text,
        duration_ms integer not null,
        primary key (delivery_id, attempt)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`drop table webhook_attempts`);
    await q.query(`drop table webhook_deliveries`);
    await q.query(`drop table webhook_subscriptions`);
  }
}
