import { fileURLToPath } from 'node:url';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import {
  WEBHOOK_PERMANENT_FAILURES,
  webhookWorkflowId,
  type WebhookActivities,
  type WebhookDeliveryInput,
} from '#libs/contracts';
import { sourceBundlerOptions } from '../../apps/worker/src/workflow-bundle.js';

// The delivery workflow's retry schedule under Temporal's time-skipping test server: the default
// 24 hours of exponential retries run in moments. The activities are stand-ins that answer as a
// receiver would (the real ones are covered by test/e2e/webhooks.e2e-spec.ts).
const workflowsPath = fileURLToPath(new URL('../src/index.ts', import.meta.url));
const HOUR = 60 * 60 * 1000;
/** The production defaults (libs/config): 5 s doubling, at most 1 hour apart, for 24 hours. */
const defaults = { initialIntervalMs: 5_000, maximumIntervalMs: HOUR, retryForMs: 24 * HOUR, attemptTimeoutMs: 15_000 };

describe('webhookDeliveryWorkflow', () => {
  let env: TestWorkflowEnvironment;
  const taskQueue = 'webhook-delivery-test';

  beforeAll(async () => {
    const path = process.env.MAS_TEMPORAL_TEST_SERVER;
    if (!path) throw new Error('MAS_TEMPORAL_TEST_SERVER is not set: run the tests with `npm test`');
    env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path } } });
  });
  afterAll(async () => {
    await env?.teardown();
  });

  /** Runs one delivery against a receiver that answers `answers[i]` to attempt i+1 (the last one repeats). */
  async function deliver(id: string, answers: readonly ('ok' | 'fail' | 'gone')[]) {
    const attempts: number[] = [];
    const failed: string[] = [];
    const activities: WebhookActivities = {
      deliverWebhook: async ({ deliveryId }) => {
        attempts.push(await env.currentTimeMs());
        const answer = answers[Math.min(attempts.length, answers.length) - 1];
        if (answer === 'ok') return { deliveryId, status: 'delivered', statusCode: 200 };
        if (answer === 'gone')
          throw ApplicationFailure.create({
            nonRetryable: true,
            type: WEBHOOK_PERMANENT_FAILURES.receiverGone,
            message: 'answered 410',
          });
        throw ApplicationFailure.create({ type: 'webhook_not_accepted', message: 'answered 500' });
      },
      markWebhookFailed: async ({ deliveryId }) => void failed.push(deliveryId),
    };
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath,
      bundlerOptions: sourceBundlerOptions(),
      activities,
    });
    const startedAt = await env.currentTimeMs();
    const input: WebhookDeliveryInput = { deliveryId: id, ...defaults };
    const result = await worker.runUntil(
      env.client.workflow.execute('webhookDeliveryWorkflow', {
        workflowId: webhookWorkflowId(id),
        taskQueue,
        args: [input],
      }),
    );
    return { result, attempts: attempts.map((t) => t - startedAt), failed };
  }

  it('retries a failing receiver until it accepts', async () => {
    const { result, attempts, failed } = await deliver('d-accepts', ['fail', 'fail', 'ok']);
    expect(result).toEqual({ deliveryId: 'd-accepts', status: 'delivered', statusCode: 200 });
    expect(attempts).toHaveLength(3);
    expect(failed).toEqual([]);
  });

  it('retries with exponential backoff for 24 hours, then records the delivery as failed', async () => {
    const { result, attempts, failed } = await deliver('d-never', ['fail']);
    expect(result).toEqual({ deliveryId: 'd-never', status: 'failed' });
    expect(failed).toEqual(['d-never']);
    const gaps = attempts.slice(1).map((t, i) => t - attempts[i]!);
    // Each wait at least doubles until it reaches the 1-hour cap, never beyond it.
    for (let i = 1; i < gaps.length; i++)
      expect(gaps[i]!).toBeGreaterThanOrEqual(Math.min(gaps[i - 1]! * 2, HOUR) - 1000);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(HOUR + 1000);
    // Attempts go on for the whole day and stop with it.
    expect(attempts.at(-1)!).toBeGreaterThan(23 * HOUR);
    expect(attempts.at(-1)!).toBeLessThanOrEqual(24 * HOUR);
  });

  it('stops at once when the receiver answers 410 Gone', async () => {
    const { result, attempts, failed } = await deliver('d-gone', ['gone']);
    expect(result).toEqual({ deliveryId: 'd-gone', status: 'failed' });
    expect(attempts).toHaveLength(1);
    expect(failed).toEqual(['d-gone']);
  });
});
