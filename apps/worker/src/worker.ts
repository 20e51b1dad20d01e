import type { INestApplicationContext } from '@nestjs/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { APP_CONFIG, requireTemporalAddress, temporalConnectionOptions, type AppConfig } from '#libs/config';
import type { AgentActivities, ReconcilerActivities as ReconcilerContract, SessionActivities, WebhookActivities } from '#libs/contracts';
import { temporalWorkerTracing, withActivityLogContext } from '#libs/observability';
import { payloadDataConverter, TemporalClientService } from '#libs/temporal';
import { BeginRequestActivity } from './activities/begin-request.activity.js';
import { BuiltinToolActivities } from './activities/builtin-tools.activity.js';
import { ConversationActivityHandlers } from './activities/conversation.activity.js';
import { MeteringActivities } from './activities/metering.activity.js';
import { ModelCallActivity } from './activities/model-call.activity.js';
import { ReconcilerActivities } from './activities/reconciler.activity.js';
import { RequestEventsActivities } from './activities/request-events.activity.js';
import { SessionEventsActivities } from './activities/session.activity.js';
import { WebhookDeliveryActivities } from './activities/webhook-delivery.activity.js';
import { ensureReconcilerSchedule } from './reconciler-schedule.js';
import { workflowBundleOptions } from './workflow-bundle.js';
import { withWorkflowPromiseHooks } from './workflow-promise-hooks.js';
import { callWorkflowsWithoutWatchdog } from './workflow-vm-calls.js';

/** The activities of the agent task queue, bound from the Nest container. */
export function agentActivities(app: INestApplicationContext): AgentActivities {
  const metering = app.get(MeteringActivities);
  const model = app.get(ModelCallActivity);
  const tools = app.get(BuiltinToolActivities);
  const events = app.get(RequestEventsActivities);
  const conversations = app.get(ConversationActivityHandlers);
  return {
    beginRequest: app.get(BeginRequestActivity).beginRequest,
    recordStop: process.env.MAS_TEST_EXIT_AFTER_RECORD_STOP === '1' ? exitAfter(metering.recordStop) : metering.recordStop,
    releaseReservation: metering.releaseReservation,
    callModel: model.callModel,
    emitStreamEvents: model.emitStreamEvents,
    streamedText: model.streamedText,
    runBuiltinTool: tools.runBuiltinTool,
    recordToolOutputs: events.recordToolOutputs,
    appendMessages: conversations.appendMessages,
    appendExchange: conversations.appendExchange,
  };
}

/** Test-only (MAS_TEST_EXIT_AFTER_RECORD_STOP=1, test/e2e/retried-task.e2e-spec.ts): the worker
 * dies by SIGKILL right after the step's transaction commits, before its workflow task completes:
 * the window in which Temporal retries the task on another worker, which runs the step again. */
function exitAfter<A extends unknown[], R>(step: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args) => {
    await step(...args);
    process.kill(process.pid, 'SIGKILL');
    return new Promise<R>(() => undefined);
  };
}

/** The activities of sessionWorkflow (same task queue). */
export function sessionActivities(app: INestApplicationContext): SessionActivities {
  return { recordSession: app.get(SessionEventsActivities).recordSession };
}

/** The activities of ledgerReconcilerWorkflow (same task queue). */
export function reconcilerActivities(app: INestApplicationContext): ReconcilerContract {
  return { reconcile: app.get(ReconcilerActivities).reconcile };
}

/** The activities of webhookDeliveryWorkflow (same task queue). */
export function webhookActivities(app: INestApplicationContext): WebhookActivities {
  const webhooks = app.get(WebhookDeliveryActivities);
  return { deliverWebhook: webhooks.deliverWebhook, markWebhookFailed: webhooks.markWebhookFailed };
}

/** The Temporal worker of the agent task queue (and the reconciler's schedule on it).
 * `workflowInterceptorModules` go into the workflow bundle (tests: a worker whose workflow code
 * differs from the one that started a run, as after a deploy). */
export async function createAgentWorker(app: INestApplicationContext, options: { workflowInterceptorModules?: readonly string[] } = {}): Promise<{ worker: Worker; connection: NativeConnection }> {
  const config = app.get<AppConfig>(APP_CONFIG);
  const connection = await NativeConnection.connect({ address: requireTemporalAddress(config), ...temporalConnectionOptions(config.engines.temporal) });
  // With tracing on: workflow and activity spans continuing the client's trace (nothing when off).
  const traced = temporalWorkerTracing();
  const workflowModules = [...(traced.interceptors?.workflowModules ?? []), ...(options.workflowInterceptorModules ?? [])];
  const tracing = workflowModules.length > 0 ? { ...traced, interceptors: { ...traced.interceptors, workflowModules } } : traced;
  // Calls into the workflows' context without a watchdog thread each (workflow-vm-calls.ts), and
  // the SDK's promise hook only when stack traces are asked for (workflow-promise-hooks.ts).
  callWorkflowsWithoutWatchdog();
  const worker = await withWorkflowPromiseHooks(config.temporal.workflowStackTraces, () =>
    Worker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      ...workflowBundleOptions({ withInterceptorModules: Boolean(tracing.interceptors?.workflowModules?.length) }),
      activities: withActivityLogContext({ ...agentActivities(app), ...sessionActivities(app), ...reconcilerActivities(app), ...webhookActivities(app) }),
      // SIGTERM drains: running activities (a model call, a tool) get this long to finish before
      // they are cancelled and retried on another worker; workflow tasks always finish.
      shutdownGraceTime: '30 seconds',
      // As many polls on the task queue as on this worker's sticky queue (the SDK's default is 1:5):
      // a request the caller waits for runs in one workflow task, its first, which always comes
      // from the task queue, so a poll must be waiting there (task dispatch p50 17 -> 3 ms, docs/performance.md).
      nonStickyToStickyPollRatio: 1,
      // Workflow code runs in this thread's V8 context (the SDK's "debugMode", the way its replay
      // worker runs) instead of a worker thread: an activation no longer crosses threads twice, and
      // the thread's own V8 isolate (about 50 MB) is gone: worker RSS at idle 273 -> 220 MB, the one
      // workflow task of a request about 5 ms shorter (docs/performance.md). There is no limit on
      // one activation's run time in this mode (docs/decisions.md says what that means).
      debugMode: true,
      // Payloads (inputs, results, updates, signals) encrypted outside the workflow sandbox.
      dataConverter: payloadDataConverter(config),
      ...tracing,
    }),
  );
  await ensureReconcilerSchedule(app.get(TemporalClientService).client!, config);
  return { worker, connection };
}
