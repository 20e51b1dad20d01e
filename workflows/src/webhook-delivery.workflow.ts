import { ActivityFailure, proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import type { WebhookActivities, WebhookDeliveryInput, WebhookDeliveryResult } from '#libs/contracts';
import { WEBHOOK_PERMANENT_FAILURES } from '#libs/contracts';
import { whenVersioned } from './versioning.js';

const { markWebhookFailed } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * Delivers one webhook, `webhook-<delivery id>` in the Temporal UI. Each attempt is one activity
 * attempt (signed afresh, recorded in `webhook_attempts`); Temporal's retry policy is the
 * schedule: exponential from `initialIntervalMs`, capped at `maximumIntervalMs`, for `retryForMs`
 * (24 hours by default) after the first attempt. A 2xx ends it; an endpoint removed, an address
 * refused, or a receiver that answered 410 ends it at once.
 */
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  const { deliverWebhook } = proxyActivities<WebhookActivities>({
    startToCloseTimeout: input.attemptTimeoutMs + 5_000,
    scheduleToCloseTimeout: input.retryForMs,
    retry: {
      initialInterval: input.initialIntervalMs,
      backoffCoefficient: 2,
      maximumInterval: input.maximumIntervalMs,
      nonRetryableErrorTypes: Object.values(WEBHOOK_PERMANENT_FAILURES),
    },
  });
  try {
    return await deliverWebhook({ deliveryId: input.deliveryId, timeoutMs: input.attemptTimeoutMs });
  } catch (e) {
    if (!(e instanceof ActivityFailure)) throw e;
    // Retries ran out (or a failure no retry fixes): every attempt is already recorded.
    await markWebhookFailed({ deliveryId: input.deliveryId });
    return { deliveryId: input.deliveryId, status: 'failed' };
  }
}

// Worker Versioning: a delivery retried for 24 hours moves to the current build at its next
// workflow task, so its code changes only behind patched().
setWorkflowOptions(whenVersioned('AUTO_UPGRADE'), webhookDeliveryWorkflow);
