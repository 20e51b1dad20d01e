import type { DataSource } from 'typeorm';
import type { AppConfig } from '#libs/config';
import { BlobStore, ConversationStore, FileStore } from '#libs/persistence';
import { StreamStore } from '#libs/streaming';
import { deleteExpiredWebhookDeliveries } from '#libs/webhooks';

/** One table that grows with traffic and how long its rows are kept. */
export interface RetentionRule {
  readonly table: string;
  /** What is kept, for docs/events and the log. */
  readonly keeps: string;
  /** Deletes what has passed its retention; the number of rows deleted. */
  prune(db: DataSource, settings: RetentionSettings): Promise<number>;
}

/** The retention windows that are configurable. */
export type RetentionSettings = Pick<AppConfig, 'streamRetentionSeconds'>;

/** A DELETE whose row count TypeORM's pg driver returns as the second element. */
async function deleted(db: DataSource, sql: string): Promise<number> {
  const [, count] = (await db.query(sql)) as [unknown, number];
  return count;
}

/**
 * Every table that grows with traffic, with its retention (docs/reliability.md lists the same).
 * The event store itself (`events`) is the source of truth and is kept; the read models keep
 * 30 days of requests (issue 13).
 */
export const RETENTION_RULES: readonly RetentionRule[] = [
  { table: 'blobs', keeps: 'input files and large tool outputs for 24 hours', prune: (db) => new BlobStore(db).deleteExpired() },
  { table: 'conversations', keeps: 'conversations (and their messages) for 24 hours after their last message', prune: (db) => new ConversationStore(db).deleteExpired() },
  { table: 'generated_files', keeps: 'generated files for 7 days', prune: (db) => new FileStore(db).deleteExpired() },
  {
    table: 'stream_events',
    keeps: "a request's stream events while it runs and for 24 hours (STREAM_RETENTION_SECONDS) after its end; a stream that never ended, 24 hours more",
    prune: (db, settings) => new StreamStore(db, settings.streamRetentionSeconds).deleteExpired(),
  },
  { table: 'outbox', keeps: 'published rows for 7 days (unpublished rows are never deleted)', prune: (db) => deleted(db, `delete from outbox where published_at < now() - interval '7 days'`) },
  {
    table: 'projection_processed',
    keeps: 'processed-event marks for 30 days (a redelivery comes within minutes; a rebuild starts from an empty table)',
    prune: (db) => deleted(db, `delete from projection_processed where processed_at < now() - interval '30 days'`),
  },
  // The read models keep 30 days (DESIGN.md section 9): what GET /v1/agent/{id} and GET /v1/sessions
  // answer. The events stay in the event store; a rebuild brings rows back and this prunes them again.
  { table: 'request_log', keeps: 'requests for 30 days after their last change', prune: (db) => deleted(db, `delete from request_log where updated_at < now() - interval '30 days'`) },
  { table: 'request_views', keeps: 'the content of stops (message, tool calls) for 30 days', prune: (db) => deleted(db, `delete from request_views where recorded_at < now() - interval '30 days'`) },
  { table: 'sessions', keeps: 'sessions for 30 days after they expired or ended', prune: (db) => deleted(db, `delete from sessions where status <> 'active' and expires_at < now() - interval '30 days'`) },
  { table: 'webhook_deliveries', keeps: 'finished webhook deliveries and their attempts for 30 days (pending ones until their retries end)', prune: (db) => deleteExpiredWebhookDeliveries(db) },
  { table: 'idempotency_keys', keeps: 'Idempotency-Keys for their 24-hour window plus an hour', prune: (db) => deleted(db, `delete from idempotency_keys where created_at < now() - interval '25 hours'`) },
  { table: 'rate_limit_hits', keeps: 'rate-limit hits for their sliding minute', prune: (db) => deleted(db, `delete from rate_limit_hits where at < clock_timestamp() - interval '2 minutes'`) },
  {
    table: 'credit_ledger',
    keeps: 'settled reservations for 400 days (the charges stay in the event store); open reservations until settled',
    prune: (db) =>
      deleted(
        db,
        `delete from credit_ledger l where l.created_at < now() - interval '400 days'
          and exists (select 1 from credit_ledger s where s.request_id = l.request_id and s.kind = 'settle')`,
      ),
  },
];

/** Runs every rule; a rule that fails does not stop the others. */
export async function pruneAll(db: DataSource, settings: RetentionSettings, rules: readonly RetentionRule[] = RETENTION_RULES): Promise<{ table: string; deleted: number; error?: string }[]> {
  const results: { table: string; deleted: number; error?: string }[] = [];
  for (const rule of rules) {
    try {
      results.push({ table: rule.table, deleted: await rule.prune(db, settings) });
    } catch (e) {
      results.push({ table: rule.table, deleted: 0, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return results;
}
