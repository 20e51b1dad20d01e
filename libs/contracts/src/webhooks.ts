/** The events a webhook endpoint can subscribe to (DESIGN.md section 9). */
export const WEBHOOK_EVENTS = [
  'agent.requires_tool_outputs',
  'agent.completed',
  'agent.failed',
  'agent.expired',
  'agent.cancelled',
  'session.expired',
  'session.ended',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

export const isWebhookEventType = (value: unknown): value is WebhookEventType =>
  (WEBHOOK_EVENTS as readonly unknown[]).includes(value);

/** The workflow that delivers one webhook: what an operator types into the Temporal UI. */
export const webhookWorkflowId = (deliveryId: string): string => `webhook-${deliveryId}`;

/** Input of webhookDeliveryWorkflow: the delivery's id only (its body, URL and secret stay in
 * PostgreSQL) and the retry schedule, from the worker's configuration. */
export interface WebhookDeliveryInput {
  readonly deliveryId: string;
  /** First retry delay, doubled after each failed attempt up to `maximumIntervalMs`. */
  readonly initialIntervalMs: number;
  readonly maximumIntervalMs: number;
  /** How long after the first attempt the delivery is still retried. */
  readonly retryForMs: number;
  /** Time limit of one attempt. */
  readonly attemptTimeoutMs: number;
}

/** How a delivery ended. */
export interface WebhookDeliveryResult {
  readonly deliveryId: string;
  readonly status: 'delivered' | 'failed';
  /** The HTTP status of the accepted attempt. */
  readonly statusCode?: number;
}

/** Failure types of deliverWebhook that no retry can fix. */
export const WEBHOOK_PERMANENT_FAILURES = {
  /** The endpoint was removed, or the delivery is unknown. */
  gone: 'webhook_gone',
  /** The receiver's address is not public and not allowed (WEBHOOK_ALLOW_HOSTS). */
  refused: 'webhook_address_refused',
  /** The receiver answered 410 Gone: it wants no more deliveries (Standard Webhooks). */
  receiverGone: 'webhook_receiver_gone',
} as const;

/** Activities of webhookDeliveryWorkflow. */
export interface WebhookActivities {
  /** One attempt: signs and POSTs the stored body, records the attempt; a 2xx marks the delivery
   * delivered (an already delivered one is not sent again). Anything else throws. */
  deliverWebhook(input: { deliveryId: string; timeoutMs: number }): Promise<WebhookDeliveryResult>;
  /** Records that the delivery gave up (retries exhausted, or a permanent failure). */
  markWebhookFailed(input: { deliveryId: string }): Promise<void>;
}
