import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { AgentActivities, ConversationActivities } from '#libs/contracts';

// The activities of the agent loop and the conversation store, as workflows call them (types only;
// the worker binds the implementations). Their timeouts and retries are decided here, once.

// The money and event steps: short PostgreSQL transactions, each idempotent by request id. A
// database that blinks must not fail a run that is paid for, so they retry with backoff for up to
// 15 minutes; should that run out, the clean-up releases the reservation (or the reconciler does).
export const { beginRequest, recordStop, releaseReservation, recordToolOutputs } =
  proxyLocalActivities<AgentActivities>({
    startToCloseTimeout: '10 seconds',
    scheduleToCloseTimeout: '15 minutes',
    retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '15 seconds' },
  });

export const { emitStreamEvents, streamedText } = proxyLocalActivities<AgentActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 ms', maximumAttempts: 5 },
});

// Conversation writes: idempotent (a seq is written once per attempt, a copy never twice), so a
// database that blinks is retried; one that stays away fails the run (and releases its credits).
export const { appendMessages } = proxyLocalActivities<ConversationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 10 },
});

// A session's conversation must follow the session, so a failing database is retried for as long
// as it takes (like the session's read model).
export const { appendExchange } = proxyLocalActivities<ConversationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

// 429 and 5xx from the provider retry with backoff; a rejected request (4xx) is non-retryable.
const modelCallRetry = {
  initialInterval: '500 ms',
  backoffCoefficient: 2,
  maximumInterval: '10 seconds',
  maximumAttempts: 4,
  nonRetryableErrorTypes: ['compute_error', 'service_unavailable'],
};

// A run whose caller waits for its stop calls the model as a local activity: the request then runs
// in one workflow task from admission to its stop, with no activity task, no second workflow task
// and no history write between them (docs/performance.md). A call longer than the workflow task
// timeout keeps its task alive with workflow task heartbeats (every 8 s), and a cancellation
// reaches it at the next one.
export const { callModel } = proxyLocalActivities<AgentActivities>({
  startToCloseTimeout: '2 minutes',
  retry: modelCallRetry,
});

/**
 * The long activities, as a run calls them: a streamed or background run's model call, and the
 * built-in tools. They are regular activities, on `taskQueue` when the run's input names one (the
 * bulkhead: workers of their own, which the operator may run at a lower CPU priority or under a
 * CPU limit of their own, so that a tenant's streams and tools do not take the cores from every
 * request's short path; docs/operations.md) and on the workflow's own task queue otherwise. A run
 * that names none schedules exactly the commands it did before the option existed.
 */
export function longActivities(taskQueue: string | undefined) {
  const queue = taskQueue ? { taskQueue } : {};
  // A streamed or background run calls the model as a regular activity: its first workflow task
  // ends at admission, so the api opens the stream (or answers in_progress) before the model
  // answers, and a cancellation reaches the call at once (heartbeats).
  const { callModel: callModelStreaming } = proxyActivities<AgentActivities>({
    ...queue,
    startToCloseTimeout: '2 minutes',
    heartbeatTimeout: '30 seconds',
    retry: modelCallRetry,
  });
  const { runBuiltinTool } = proxyActivities<AgentActivities>({
    ...queue,
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '500 ms', maximumAttempts: 3 },
  });
  return { callModelStreaming, runBuiltinTool };
}
