export {
  generateWebhookSecret,
  signWebhook,
  WEBHOOK_SECRET_PREFIX,
  type WebhookSignatureHeaders,
} from './signature.js';
export { webhookEventOf } from './webhook-events.js';
export {
  deleteExpiredWebhookDeliveries,
  WEBHOOK_DELIVERY_RETENTION_DAYS,
  WebhookStore,
  webhookDeliveryId,
  type DeliveryTarget,
  type WebhookAttempt,
  type WebhookDelivery,
  type WebhookDeliveryStatus,
  type WebhookSubscription,
} from './webhook-store.js';
export { sendWebhook, type SendOptions, type SendOutcome } from './webhook-sender.js';
export { WebhookDispatcher, type DispatcherOptions, type WebhookResources } from './webhook-dispatcher.js';
export { WebhooksModule } from './webhooks.module.js';
