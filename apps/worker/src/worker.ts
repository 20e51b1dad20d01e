import type { INestApplicationContext } from '@nestjs/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import {
  APP_CONFIG,
  ConfigError,
  requireTemporalAddress,
  temporalConnectionOptions,
  type AppConfig,
} from '#libs/config';
import type {
  AgentActivities,
  ReconcilerActivities as ReconcilerContract,
  SessionActivities,
  WebhookActivities,
} from '#libs/contracts';
import { temporalWorkerTracing, withActivityLogContext } from '#libs/observability';
import { payloadDataConverter, promoteBuild, TemporalClientService } from '#libs/temporal';
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
import { builtBuildId, workflowBundleOptions } from './workflow-bundle.js';
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
    recordStop: app.get<AppConfig>(APP_CONFIG).testHooks.exitAfterRecordStop
      ? exitAfter(metering.recordStop)
      : metering.recordStop,
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

/** Test-only (MAS_TEST_EXIT_AFTER_RECORD_STOP=true, test/e2e/retried-task.e2e-spec.ts): the worker
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

/** The build a versioned worker polls as: one Worker Deployment Version of the deployment named
 * after its task queue (DESIGN section 10, docs/operations.md "Deploying"). */
export interface WorkerBuild {
  readonly deploymentName: string;
  readonly buildId: string;
}

/** This worker's build, or undefined when Worker Versioning is off (TEMPORAL_WORKER_VERSIONING=false). */
export function workerBuild(config: AppConfig): WorkerBuild | undefined {
  const { versioning, taskQueue } = config.temporal;
  if (!versioning.enabled) return undefined;
  const buildId = versioning.buildId ?? builtBuildId();
  if (!buildId)
    throw new ConfigError([
      'TEMPORAL_BUILD_ID is required when there is no build (dist/workflows/build-id, written by `npm run build`) and TEMPORAL_WORKER_VERSIONING is not false',
    ]);
  // Temporal's version strings join the two with '.' or ':'.
  if (/[.:]/.test(taskQueue))
    throw new ConfigError([
      `TEMPORAL_TASK_QUEUE names the worker deployment and may not contain '.' or ':' while TEMPORAL_WORKER_VERSIONING is on, got "${taskQueue}"`,
    ]);
  return { deploymentName: taskQueue, buildId };
}

/**
 * After the worker's first poll has registered its build: makes it the deployment's current
 * build if the deployment has none yet (a first start: a fresh machine, a test's own task queue),
 * or, with TEMPORAL_DEPLOYMENT_PROMOTE=on-start, if the current build registered before this one:
 * a restarted worker of an older build never takes the deployment back from a newer one. A
 * versioned build that is not current gets only the runs pinned to it; an operator promotes it
 * (`mas deploy promote`).
 */
export async function becomeCurrentIfDue(
  app: INestApplicationContext,
  build: WorkerBuild,
): Promise<{ current: string | undefined; promoted: boolean }> {
  const config = app.get<AppConfig>(APP_CONFIG);
  const { connection } = app.get(TemporalClientService);
  if (!connection) throw new ConfigError(['TEMPORAL_ADDRESS is required but not set']);
  const identity = `worker ${build.buildId} (${process.pid})`;
  return promoteBuild(connection.workflowService, config.temporal.namespace, build.deploymentName, build.buildId, {
    identity,
    onlyIfNone: config.temporal.versioning.promote === 'if-none',
    onlyIfNewer: config.temporal.versioning.promote === 'on-start',
  });
}

/** The Temporal worker of the agent task queue (and the reconciler's schedule on it).
 * `workflowInterceptorModules` go into the workflow bundle (tests: a worker whose workflow code
 * differs from the one that started a run, as after a deploy). */
export async function createAgentWorker(
  app: INestApplicationContext,
  options: { workflowInterceptorModules?: readonly string[] } = {},
): Promise<{ worker: Worker; connection: NativeConnection; build: WorkerBuild | undefined }> {
  const config = app.get<AppConfig>(APP_CONFIG);
  const build = workerBuild(config);
  const connection = await NativeConnection.connect({
    address: requireTemporalAddress(config),
    ...temporalConnectionOptions(config.engines.temporal),
  });
  // With tracing on: workflow and activity spans continuing the client's trace (nothing when off).
  const traced = temporalWorkerTracing();
  const workflowModules = [
    ...(traced.interceptors?.workflowModules ?? []),
    ...(options.workflowInterceptorModules ?? []),
  ];
  const tracing =
    workflowModules.length > 0 ? { ...traced, interceptors: { ...traced.interceptors, workflowModules } } : traced;
  // Calls into the workflows' context without a watchdog thread each (workflow-vm-calls.ts), and
  // the SDK's promise hook only when stack traces are asked for (workflow-promise-hooks.ts).
  callWorkflowsWithoutWatchdog();
  const worker = await withWorkflowPromiseHooks(config.temporal.workflowStackTraces, () =>
    Worker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      ...workflowBundleOptions({ withInterceptorModules: Boolean(tracing.interceptors?.workflowModules?.length) }),
      activities: withActivityLogContext({
        ...agentActivities(app),
        ...sessionActivities(app),
        ...reconcilerActivities(app),
        ...webhookActivities(app),
      }),
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
      // Worker Versioning: agentRequestWorkflow is pinned to the build that started it; the others
      // move to the current build at their next workflow task (each workflow declares which, with
      // setWorkflowOptions; a workflow that does not falls back to AUTO_UPGRADE).
      ...(build
        ? {
            workerDeploymentOptions: {
              version: build,
              useWorkerVersioning: true,
              defaultVersioningBehavior: 'AUTO_UPGRADE' as const,
            },
          }
        : {}),
      // Payloads (inputs, results, updates, signals) encrypted outside the workflow sandbox.
      dataConverter: payloadDataConverter(config),
      ...tracing,
    }),
  );
  await ensureReconcilerSchedule(app.get(TemporalClientService).client!, config);
  return { worker, connection, build };
}

/**
 * The bulkhead's worker (TEMPORAL_WORKER_ROLE=long-activities): only the activities of the long
 * activity task queue (a streamed or background run's model calls, built-in tools; the api names
 * the queue in every run it starts), no workflows. It polls unversioned: activities are not
 * replayed, and a pinned run's activities on another task queue go to that queue's pollers.
 * Started as a process of its own, it runs at a lower CPU priority than the workflows' worker
 * (`worker-long` in scripts/app-process.mjs: `npm start`, the drill), so that in a burst the short
 * path of every request wins the cores (docs/operations.md, "Long activities on a worker of their own").
 */
export async function createLongActivityWorker(
  app: INestApplicationContext,
): Promise<{ worker: Worker; connection: NativeConnection; taskQueue: string }> {
  const config = app.get<AppConfig>(APP_CONFIG);
  const taskQueue = config.temporal.longActivityTaskQueue;
  if (!taskQueue)
    throw new ConfigError([
      'TEMPORAL_LONG_ACTIVITY_TASK_QUEUE is required when TEMPORAL_WORKER_ROLE is long-activities',
    ]);
  if (taskQueue === config.temporal.taskQueue)
    throw new ConfigError([
      `TEMPORAL_LONG_ACTIVITY_TASK_QUEUE must differ from TEMPORAL_TASK_QUEUE ("${taskQueue}"): the workflows' queue needs a worker with workflows`,
    ]);
  const connection = await NativeConnection.connect({
    address: requireTemporalAddress(config),
    ...temporalConnectionOptions(config.engines.temporal),
  });
  const { interceptors } = temporalWorkerTracing();
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue,
    activities: withActivityLogContext({ ...agentActivities(app) }),
    shutdownGraceTime: '30 seconds',
    dataConverter: payloadDataConverter(config),
    ...(interceptors?.activity ? { interceptors: { activity: interceptors.activity } } : {}),
  });
  return { worker, connection, taskQueue };
}
