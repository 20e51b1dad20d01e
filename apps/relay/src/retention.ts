import type { DataSource } from 'typeorm';
import type { AppConfig } from '#libs/config';
import { READ_MODEL_EXPIRED } from '#libs/events';
import { BlobStore, ConversationStore, deleteInBatches, FileStore } from '#libs/persistence';
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

/**
 * Every table that grows with traffic, with its retention (docs/api-usage.md, "Retention", lists the same).
 * The event store itself (`events`) is the source of truth and is kept; the read models keep
 * 30 days of requests (issue 13).
 */
export const RETENTION_RULES: readonly RetentionRule[] = [
  {
    table: 'blobs',
    keeps: 'input files and large tool outputs for 24 hours',
    prune: (db) => new BlobStore(db).deleteExpired(),
  },
  {
    table: 'conversations',
    keeps: 'conversations (and their messages) for 24 hours after their last message',
    prune: (db) => new ConversationStore(db).deleteExpired(),
  },
  { table: 'generated_files', keeps: 'generated files for 7 days', prune: (db) => new FileStore(db).deleteExpired() },
  {
    table: 'stream_events',
    keeps:
      "a request's stream events while it runs and for 24 hours (STREAM_RETENTION_SECONDS) after its end; a stream that never ended, 24 hours more",
    prune: (db, settings) => new StreamStore(db, settings.streamRetentionSeconds).deleteExpired(),
  },
  {
    table: 'outbox',
    keeps: 'published rows for 7 days (unpublished rows are never deleted)',
    prune: (db) => deleteInBatches(db, 'outbox', `published_at < now() - interval '7 days'`),
  },
  {
    table: 'projection_processed',
    keeps:
      'processed-event marks for 30 days (a redelivery comes within minutes; a rebuild starts from an empty table)',
    prune: (db) => deleteInBatches(db, 'projection_processed', `processed_at < now() - interval '30 days'`),
  },
  // The read models keep 30 days (DESIGN.md section 9): what GET /v1/agent/{id} and GET /v1/sessions
  // answer. The events stay in the event store; a rebuild brings rows back and this prunes them again.
  {
    table: 'request_log',
    keeps: 'requests for 30 days after their last change',
    prune: (db) => deleteInBatches(db, 'request_log', READ_MODEL_EXPIRED.request_log),
  },
  {
    table: 'request_views',
    keeps: 'the content of stops (message, tool calls) for 30 days',
    prune: (db) => deleteInBatches(db, 'request_views', `recorded_at < now() - interval '30 days'`),
  },
  {
    table: 'sessions',
    keeps: 'sessions for 30 days after they expired or ended',
    prune: (db) => deleteInBatches(db, 'sessions', READ_MODEL_EXPIRED.sessions),
  },
  {
    table: 'webhook_deliveries',
    keeps: 'finished webhook deliveries and their attempts for 30 days (pending ones until their retries end)',
    prune: (db) => deleteExpiredWebhookDeliveries(db),
  },
  {
    table: 'idempotency_keys',
    keeps: 'Idempotency-Keys for their 24-hour window plus an hour',
    prune: (db) => deleteInBatches(db, 'idempotency_keys', `created_at < now() - interval '25 hours'`),
  },
  {
    table: 'rate_limit_hits',
    keeps: 'rate-limit hits for their sliding minute',
    prune: (db) => deleteInBatches(db, 'rate_limit_hits', `at < clock_timestamp() - interval '2 minutes'`),
  },
  {
    table: 'credit_ledger',
    keeps: 'settled reservations for 400 days (the charges stay in the event store); open reservations until settled',
    // A request's rows go once its settlement is 400 days old (its reservation is older), found by
    // the settlements' own index; batches of 2500 requests.
    prune: (db) =>
      deleteInBatches(
        db,
        'credit_ledger',
        `request_id in (select s.request_id from credit_ledger s where s.kind = 'settle' and s.created_at < now() - interval '400 days' limit 2500) and created_at < now() - interval '400 days'`,
      ),
  },
];

/** Runs every rule; a rule that fails does not stop the others. */
export async function pruneAll(
  db: DataSource,
  settings: RetentionSettings,
  rules: readonly RetentionRule[] = RETENTION_RULES,
): Promise<{ table: string; deleted: number; error?: string }[]> {
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
