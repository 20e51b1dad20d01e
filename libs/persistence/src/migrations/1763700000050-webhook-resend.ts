import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A delivery sent again on request (the console's "Resend", docs/console.md): a new row of
 * `webhook_deliveries` with the same event, endpoint and body, `resend_of` naming the delivery it
 * repeats, and `awaiting_start` set until the worker's webhook dispatcher has started its
 * workflow (the console never talks to Temporal). The one delivery per (event, endpoint) rule
 * now holds for the first deliveries only. Expand only: the previous release never writes a
 * resend and reads neither column.
 */
export class WebhookResend1763700000050 implements MigrationInterface {
  name = 'WebhookResend1763700000050';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `alter table webhook_deliveries add column resend_of uuid, add column awaiting_start boolean not null default false`,
    );
    await q.query(
      `create unique index webhook_deliveries_first on webhook_deliveries (event_id, subscription_id) where resend_of is null`,
    );
    await q.query(`alter table webhook_deliveries drop constraint webhook_deliveries_event_id_subscription_id_key`);
    // What the dispatcher looks for: usually no row at all.
    await q.query(
      `create index webhook_deliveries_awaiting_start on webhook_deliveries (created_at) where awaiting_start`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`delete from webhook_deliveries where resend_of is not null`);
    await q.query(`drop index webhook_deliveries_awaiting_start`);
    await q.query(
      `alter table webhook_deliveries add constraint webhook_deliveries_event_id_subscription_id_key unique (event_id, subscription_id)`,
    );
    await q.query(`drop index webhook_deliveries_first`);
    await q.query(`alter table webhook_deliveries drop column resend_of, drop column awaiting_start`);
  }
}
