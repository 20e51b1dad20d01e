import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { AccountsError, decryptSecret, encryptSecret, masterKeys } from '#libs/accounts';
import { ConfigError, type AppConfig } from '#libs/config';
import { isUuid, isWebhookEventType, WEBHOOK_EVENTS, type WebhookEventType } from '#libs/contracts';
import { deterministicUuid } from '#libs/events';
import { HostAllowList, literalAddressRefusal } from '#libs/egress';
import { deleteInBatches } from '#libs/persistence';
import { generateWebhookSecret } from './signature.js';

/** A webhook endpoint as an operator sees it: never its secret. */
export interface WebhookSubscription {
  readonly id: string;
  readonly projectId: string;
  readonly url: string;
  readonly events: readonly WebhookEventType[];
  readonly createdAt: Date;
}

/** One attempt of a delivery. */
export interface WebhookAttempt {
  readonly attempt: number;
  readonly attemptedAt: Date;
  /** The receiver's HTTP status; null when there was no answer (refused, unreachable, timed out). */
  readonly statusCode: number | null;
  readonly error: string | null;
  readonly durationMs: number;
}

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One event for one endpoint, with every attempt. */
export interface WebhookDelivery {
  readonly id: string;
  readonly subscriptionId: string;
  readonly eventId: string;
  readonly eventType: WebhookEventType;
  readonly status: WebhookDeliveryStatus;
  readonly createdAt: Date;
  readonly finishedAt: Date | null;
  /** The delivery this one sends again (a resend), or null for the event's first delivery. */
  readonly resendOf: string | null;
  readonly attempts: readonly WebhookAttempt[];
}

/** What one attempt needs: the stored body, and the endpoint with its secret (undefined once removed). */
export interface DeliveryTarget {
  readonly id: string;
  readonly projectId: string;
  readonly status: WebhookDeliveryStatus;
  readonly body: string;
  readonly endpoint?: { readonly url: string; readonly secret: string };
}

/** How long a finished delivery (and its attempts) stays listed. */
export const WEBHOOK_DELIVERY_RETENTION_DAYS = 30;

/** Deletes finished deliveries past their retention, their attempts with them (pending ones are
 * kept: their workflow is still retrying); the number of deliveries deleted. */
export async function deleteExpiredWebhookDeliveries(db: DataSource): Promise<number> {
  // Batches of 1000: each delivery's attempts go with it (on delete cascade).
  return deleteInBatches(
    db,
    'webhook_deliveries',
    `status <> 'pending' and finished_at < now() - make_interval(days => $1)`,
    [WEBHOOK_DELIVERY_RETENTION_DAYS],
    1000,
  );
}

/** The id of the delivery of one event to one endpoint: the same event dispatched again finds it. */
export const webhookDeliveryId = (eventId: string, subscriptionId: string): string =>
  deterministicUuid('webhook-delivery', eventId, subscriptionId);

/** Associated data of a secret's encryption: a ciphertext copied to another endpoint does not decrypt. */
const secretContext = (subscriptionId: string): string => `webhook-subscription:${subscriptionId}`;

interface SubscriptionRow {
  id: string;
  project_id: string;
  url: string;
  events: WebhookEventType[];
  created_at: Date;
}

const subscriptionOf = (r: SubscriptionRow): WebhookSubscription => ({
  id: r.id,
  projectId: r.project_id,
  url: r.url,
  events: r.events,
  createdAt: r.created_at,
});

/**
 * The only reader and writer of `webhook_subscriptions`, `webhook_deliveries` and
 * `webhook_attempts` (migration 1763700000014). Raw SQL, like the event store: every write is
 * one statement or one short transaction keyed by a deterministic id.
 */
export class WebhookStore {
  private readonly allow: HostAllowList;

  constructor(
    private readonly db: DataSource,
    private readonly config: Pick<AppConfig, 'masterKey' | 'webhooks'> & Partial<Pick<AppConfig, 'previousMasterKeys'>>,
  ) {
    const allow = HostAllowList.parse(config.webhooks.allowHosts);
    if (!(allow instanceof HostAllowList)) throw new ConfigError([`WEBHOOK_ALLOW_HOSTS: ${allow.error}`]);
    this.allow = allow;
  }

  /** Adds an endpoint; the secret is in the result only (stored encrypted, never shown again). */
  async add(
    projectId: string,
    input: { readonly url: string; readonly events?: readonly string[] },
  ): Promise<{ subscription: WebhookSubscription; secret: string }> {
    const url = this.checkUrl(input.url);
    const events = this.checkEvents(input.events ?? WEBHOOK_EVENTS);
    const id = randomUUID();
    const secret = generateWebhookSecret();
    const rows: SubscriptionRow[] = await this.db.query(
      `insert into webhook_subscriptions (id, project_id, url, events, secret_ciphertext) values ($1, $2, $3, $4, $5) returning id, project_id, url, events, created_at`,
      [id, projectId, url.href, events, encryptSecret(secret, this.config.masterKey, secretContext(id))],
    );
    return { subscription: subscriptionOf(rows[0]!), secret };
  }

  async list(projectId: string): Promise<WebhookSubscription[]> {
    const rows: SubscriptionRow[] = await this.db.query(
      `select id, project_id, url, events, created_at from webhook_subscriptions where project_id = $1 order by created_at, id`,
      [projectId],
    );
    return rows.map(subscriptionOf);
  }

  /** Removes an endpoint: nothing more is sent to it, retries in flight included; its deliveries stay listed. */
  async remove(projectId: string, subscriptionId: string): Promise<WebhookSubscription> {
    const notFound = new AccountsError(`no webhook "${subscriptionId}" in this project`);
    if (!isUuid(subscriptionId)) throw notFound;
    const [rows] = (await this.db.query(
      `delete from webhook_subscriptions where id = $1 and project_id = $2 returning id, project_id, url, events, created_at`,
      [subscriptionId, projectId],
    )) as [SubscriptionRow[], number];
    if (!rows[0]) throw notFound;
    return subscriptionOf(rows[0]);
  }

  /** The project's latest deliveries, newest first, each with every attempt. */
  async deliveries(projectId: string, limit = 50): Promise<WebhookDelivery[]> {
    const rows: {
      id: string;
      subscription_id: string;
      event_id: string;
      event_type: WebhookEventType;
      status: WebhookDeliveryStatus;
      created_at: Date;
      finished_at: Date | null;
      resend_of: string | null;
      attempts: {
        attempt: number;
        attempted_at: string;
        status_code: number | null;
        error: string | null;
        duration_ms: number;
      }[];
    }[] = await this.db.query(
      `select d.id, d.subscription_id, d.event_id, d.event_type, d.status, d.created_at, d.finished_at, d.resend_of,
              coalesce((select json_agg(json_build_object('attempt', a.attempt, 'attempted_at', a.attempted_at, 'status_code', a.status_code, 'error', a.error, 'duration_ms', a.duration_ms) order by a.attempt)
                          from webhook_attempts a where a.delivery_id = d.id), '[]') as attempts
         from webhook_deliveries d where d.project_id = $1 order by d.created_at desc, d.id limit $2`,
      [projectId, limit],
    );
    return rows.map((r) => ({
      id: r.id,
      subscriptionId: r.subscription_id,
      eventId: r.event_id,
      eventType: r.event_type,
      status: r.status,
      createdAt: r.created_at,
      finishedAt: r.finished_at,
      resendOf: r.resend_of,
      attempts: r.attempts.map((a) => ({
        attempt: a.attempt,
        attemptedAt: new Date(a.attempted_at),
        statusCode: a.status_code,
        error: a.error,
        durationMs: a.duration_ms,
      })),
    }));
  }

  /**
   * Sends a delivery of the project again: a new delivery of the same event to the same endpoint
   * with the same body (signed afresh at each attempt, under its own id), waiting for the worker's
   * dispatcher to start its workflow (`awaiting_start`, see `resendsAwaitingStart`). Refused for a
   * delivery of another project, one still pending, or one whose endpoint was removed.
   */
  async resend(projectId: string, deliveryId: string): Promise<{ id: string }> {
    const notFound = new AccountsError(`no webhook delivery "${deliveryId}" in this project`);
    if (!isUuid(deliveryId)) throw notFound;
    const [original] = (await this.db.query(
      `select d.status, s.id is not null as endpoint from webhook_deliveries d left join webhook_subscriptions s on s.id = d.subscription_id where d.id = $1 and d.project_id = $2`,
      [deliveryId, projectId],
    )) as { status: WebhookDeliveryStatus; endpoint: boolean }[];
    if (!original) throw notFound;
    if (!original.endpoint)
      throw new AccountsError('the endpoint of this delivery was removed: there is nowhere to send it');
    if (original.status === 'pending')
      throw new AccountsError('this delivery is still being attempted: resend it once it is delivered or has failed');
    const id = randomUUID();
    await this.db.query(
      `insert into webhook_deliveries (id, subscription_id, project_id, event_id, event_type, body, resend_of, awaiting_start)
       select $1, subscription_id, project_id, event_id, event_type, body, id, true from webhook_deliveries where id = $2 and project_id = $3`,
      [id, deliveryId, projectId],
    );
    return { id };
  }

  /** Resends whose workflow is not started yet, oldest first. */
  async resendsAwaitingStart(limit = 100): Promise<{ id: string; projectId: string }[]> {
    const rows: { id: string; project_id: string }[] = await this.db.query(
      `select id, project_id from webhook_deliveries where awaiting_start order by created_at limit $1`,
      [limit],
    );
    return rows.map((r) => ({ id: r.id, projectId: r.project_id }));
  }

  /** The resend's workflow is started (or was already). */
  async markStarted(deliveryId: string): Promise<void> {
    await this.db.query(`update webhook_deliveries set awaiting_start = false where id = $1 and awaiting_start`, [
      deliveryId,
    ]);
  }

  /** Which of these projects have at least one endpoint. */
  async projectsWithEndpoints(projectIds: readonly string[]): Promise<string[]> {
    const rows: { project_id: string }[] = await this.db.query(
      `select distinct project_id from webhook_subscriptions where project_id = any($1::uuid[])`,
      [projectIds],
    );
    return rows.map((r) => r.project_id);
  }

  /** The endpoints of a project that take this event and existed when it happened. */
  async subscribersOf(projectId: string, type: WebhookEventType, happenedAt: Date): Promise<string[]> {
    const rows: { id: string }[] = await this.db.query(
      `select id from webhook_subscriptions where project_id = $1 and $2 = any(events) and created_at <= $3 order by id`,
      [projectId, type, happenedAt],
    );
    return rows.map((r) => r.id);
  }

  /** Records the deliveries of one event (a second call for the same event adds nothing) and
   * returns each with its status. */
  async createDeliveries(
    event: { readonly id: string; readonly type: WebhookEventType; readonly projectId: string },
    subscriptionIds: readonly string[],
    body: string,
  ): Promise<{ id: string; status: WebhookDeliveryStatus }[]> {
    const ids = subscriptionIds.map((s) => webhookDeliveryId(event.id, s));
    await this.db.query(
      `insert into webhook_deliveries (id, subscription_id, project_id, event_id, event_type, body)
       select d.id, d.subscription_id, $3, $4, $5, $6 from unnest($1::uuid[], $2::uuid[]) as d(id, subscription_id)
       on conflict do nothing`,
      [ids, subscriptionIds, event.projectId, event.id, event.type, body],
    );
    return this.db.query(`select id, status from webhook_deliveries where id = any($1::uuid[]) order by id`, [ids]);
  }

  /** What an attempt sends, and where; undefined for an unknown delivery. Decrypts the secret:
   * call only inside the activity that signs. */
  async target(deliveryId: string): Promise<DeliveryTarget | undefined> {
    const rows: {
      id: string;
      project_id: string;
      status: WebhookDeliveryStatus;
      body: string;
      subscription_id: string;
      url: string | null;
      secret_ciphertext: Buffer | null;
    }[] = await this.db.query(
      `select d.id, d.project_id, d.status, d.body, d.subscription_id, s.url, s.secret_ciphertext
         from webhook_deliveries d left join webhook_subscriptions s on s.id = d.subscription_id where d.id = $1`,
      [deliveryId],
    );
    const r = rows[0];
    if (!r) return undefined;
    const endpoint =
      r.url && r.secret_ciphertext
        ? {
            url: r.url,
            secret: decryptSecret(r.secret_ciphertext, masterKeys(this.config), secretContext(r.subscription_id)),
          }
        : undefined;
    return { id: r.id, projectId: r.project_id, status: r.status, body: r.body, ...(endpoint ? { endpoint } : {}) };
  }

  /** Records one attempt (once per attempt number) and, for an accepted one, the delivery as delivered. */
  async recordAttempt(deliveryId: string, attempt: WebhookAttempt, accepted: boolean): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(
        `insert into webhook_attempts (delivery_id, attempt, attempted_at, status_code, error, duration_ms) values ($1, $2, $3, $4, $5, $6)
         on conflict (delivery_id, attempt) do update set attempted_at = excluded.attempted_at, status_code = excluded.status_code, error = excluded.error, duration_ms = excluded.duration_ms`,
        [deliveryId, attempt.attempt, attempt.attemptedAt, attempt.statusCode, attempt.error, attempt.durationMs],
      );
      if (accepted)
        await tx.query(
          `update webhook_deliveries set status = 'delivered', finished_at = now() where id = $1 and status = 'pending'`,
          [deliveryId],
        );
    });
  }

  /** Gives a delivery up (its retries ran out, or no retry can succeed). */
  async markFailed(deliveryId: string): Promise<void> {
    await this.db.query(
      `update webhook_deliveries set status = 'failed', finished_at = now() where id = $1 and status = 'pending'`,
      [deliveryId],
    );
  }

  /** The receiver's URL, refused when it is not http(s), carries credentials, or names a literal
   * address that is not public and not allowed (a hostname is judged at delivery, after DNS). */
  checkUrl(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new AccountsError(`"${raw}" is not an absolute URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new AccountsError('a webhook URL must be http or https');
    if (url.username || url.password)
      throw new AccountsError('a webhook URL must not carry credentials (the signature authenticates deliveries)');
    const refusal = literalAddressRefusal(url, this.allow);
    if (refusal)
      throw new AccountsError(
        `refused: ${refusal}; webhooks go to public addresses only unless WEBHOOK_ALLOW_HOSTS allows more`,
      );
    return url;
  }

  private checkEvents(events: readonly string[]): WebhookEventType[] {
    const unknown = events.filter((e) => !isWebhookEventType(e));
    if (unknown.length)
      throw new AccountsError(`unknown events: ${unknown.join(', ')} (valid: ${WEBHOOK_EVENTS.join(', ')})`);
    if (events.length === 0) throw new AccountsError(`name at least one event (valid: ${WEBHOOK_EVENTS.join(', ')})`);
    return [...new Set(events as WebhookEventType[])];
  }
}
