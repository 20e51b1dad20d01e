import { createHmac, randomBytes } from 'node:crypto';

/** Standard Webhooks' prefix of a symmetric signing secret. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';
/** Random bytes in a new secret (the scheme asks for 24 to 64). */
const SECRET_BYTES = 32;

/** A new signing secret: `whsec_` + base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** The three Standard Webhooks headers of one attempt. */
export interface WebhookSignatureHeaders {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
}

/**
 * Signs one attempt (Standard Webhooks 1.0, symmetric): HMAC-SHA-256 of `<id>.<timestamp>.<body>`
 * keyed by the base64-decoded part of the `whsec_` secret, sent as `v1,<base64>`.
 */
export function signWebhook(input: {
  readonly secret: string;
  readonly id: string;
  readonly timestamp: number;
  readonly body: string;
}): WebhookSignatureHeaders {
  if (!input.secret.startsWith(WEBHOOK_SECRET_PREFIX)) throw new Error('a webhook secret starts with whsec_');
  if (input.id.includes('.')) throw new Error('a webhook id must not contain "."');
  const key = Buffer.from(input.secret.slice(WEBHOOK_SECRET_PREFIX.length), 'base64');
  const timestamp = String(Math.floor(input.timestamp));
  const mac = createHmac('sha256', key).update(`${input.id}.${timestamp}.${input.body}`, 'utf8').digest('base64');
  return { 'webhook-id': input.id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${mac}` };
}
