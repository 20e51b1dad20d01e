import { ApplicationFailure, Context } from '@temporalio/activity';
import { ConfigError, type AppConfig } from '#libs/config';
import { WEBHOOK_PERMANENT_FAILURES, type WebhookActivities } from '#libs/contracts';
import { HostAllowList } from '#libs/egress';
import { sendWebhook, signWebhook, type SendOptions, type WebhookStore } from '#libs/webhooks';

/** Delivery attempts of webhookDeliveryWorkflow. The body, URL and secret are read here from
 * PostgreSQL by delivery id, so none of them is in a workflow's history. A failed attempt is
 * logged by the Temporal worker (activity failed, with the reason: a status or a network error). */
export class WebhookDeliveryActivities {
  private readonly allow: HostAllowList;

  constructor(
    private readonly store: WebhookStore,
    config: Pick<AppConfig, 'webhooks'>,
    private readonly resolve?: SendOptions['resolve'],
  ) {
    const allow = HostAllowList.parse(config.webhooks.allowHosts);
    if (!(allow instanceof HostAllowList)) throw new ConfigError([`WEBHOOK_ALLOW_HOSTS: ${allow.error}`]);
    this.allow = allow;
  }

  readonly deliverWebhook: WebhookActivities['deliverWebhook'] = async ({ deliveryId, timeoutMs }) => {
    const target = await this.store.target(deliveryId);
    if (!target)
      throw ApplicationFailure.create({
        nonRetryable: true,
        type: WEBHOOK_PERMANENT_FAILURES.gone,
        message: `no webhook delivery ${deliveryId}`,
      });
    // A retry after an accepted attempt whose completion Temporal did not get: not sent again.
    if (target.status === 'delivered') return { deliveryId, status: 'delivered' };
    if (!target.endpoint)
      throw ApplicationFailure.create({
        nonRetryable: true,
        type: WEBHOOK_PERMANENT_FAILURES.gone,
        message: 'the webhook endpoint was removed',
      });
    const attempt = Context.current().info.attempt;
    const attemptedAt = new Date();
    const headers = signWebhook({
      secret: target.endpoint.secret,
      id: deliveryId,
      timestamp: attemptedAt.getTime() / 1000,
      body: target.body,
    });
    const started = performance.now();
    const outcome = await sendWebhook(new URL(target.endpoint.url), target.body, headers, {
      allow: this.allow,
      timeoutMs,
      resolve: this.resolve,
    });
    const durationMs = Math.round(performance.now() - started);
    const statusCode = outcome.kind === 'answered' ? outcome.statusCode : null;
    const accepted = statusCode !== null && statusCode >= 200 && statusCode < 300;
    const error = outcome.kind === 'answered' ? (accepted ? null : `answered ${outcome.statusCode}`) : outcome.reason;
    await this.store.recordAttempt(deliveryId, { attempt, attemptedAt, statusCode, error, durationMs }, accepted);
    if (accepted) return { deliveryId, status: 'delivered', statusCode: statusCode };
    if (outcome.kind === 'refused')
      throw ApplicationFailure.create({
        nonRetryable: true,
        type: WEBHOOK_PERMANENT_FAILURES.refused,
        message: outcome.reason,
      });
    if (statusCode === 410)
      throw ApplicationFailure.create({
        nonRetryable: true,
        type: WEBHOOK_PERMANENT_FAILURES.receiverGone,
        message: 'the receiver answered 410 Gone',
      });
    throw ApplicationFailure.create({ type: 'webhook_not_accepted', message: error ?? 'not accepted' });
  };

  readonly markWebhookFailed: WebhookActivities['markWebhookFailed'] = async ({ deliveryId }) => {
    await this.store.markFailed(deliveryId);
  };
}
