import { Logger } from '@nestjs/common';
import {
  type Client,
  type Connection,
  ServiceError as TemporalServiceError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import protos from '@temporalio/proto';
import { isErrorCode, ServiceError, type ErrorCode } from '#libs/contracts';
import { workflowTasksFailing } from '#libs/observability';

/** The api's Temporal client and connection. */
export interface ConfiguredTemporal {
  readonly client: Client;
  readonly connection: Connection;
}

/** The one check that Temporal is configured: without TEMPORAL_ADDRESS every call that needs a
 * workflow is 503 service_unavailable (reads answer from the read models alone). */
export function requireTemporal(temporal: {
  readonly client: Client | undefined;
  readonly connection: Connection | undefined;
}): ConfiguredTemporal {
  const { client, connection } = temporal;
  if (!client || !connection)
    throw new ServiceError('service_unavailable', 'The compute service is not configured (no Temporal address).');
  return { client, connection };
}

/** gRPC status codes that mean the request never reached a running workflow. */
const NOT_FOUND = 5;

/** Turns what the Temporal client threw into a contract error. `notFound` is the code for an
 * unknown or finished workflow (context_expired for tool outputs, request_not_found for reads). */
export function fromTemporalError(e: unknown, notFound: ErrorCode): ServiceError {
  if (e instanceof ServiceError) return e;
  if (e instanceof WorkflowNotFoundError) return new ServiceError(notFound, notFoundMessage(notFound));
  if (e instanceof WorkflowUpdateFailedError) {
    const cause = e.cause;
    if (cause instanceof ApplicationFailure && isErrorCode(cause.type))
      return new ServiceError(cause.type, cause.message);
    return new ServiceError('compute_error', 'The agent run failed.');
  }
  if (e instanceof WorkflowUpdateRPCTimeoutOrCancelledError) {
    return new ServiceError(
      'compute_unavailable',
      'The agent did not answer in time; the compute service may be overloaded.',
    );
  }
  const grpcCode =
    (e as { code?: unknown } | null)?.code ??
    (e instanceof TemporalServiceError ? (e.cause as { code?: unknown } | undefined)?.code : undefined);
  const text = e instanceof Error ? e.message : String(e);
  // An Update sent to a closed workflow is refused with NOT_FOUND ("workflow execution already completed").
  if (grpcCode === NOT_FOUND || /already completed|not found/i.test(text))
    return new ServiceError(notFound, notFoundMessage(notFound));
  return new ServiceError('compute_unavailable', 'The compute service could not be reached.');
}

function notFoundMessage(code: ErrorCode): string {
  return code === 'context_expired'
    ? 'The tool execution context has expired (5 minutes after the tool calls) or does not exist.'
    : 'No request with this id exists in this project.';
}

/** Runs a Temporal call bounded as a whole (the connection phase included), so a missing worker or
 * an unreachable Temporal becomes compute_unavailable instead of a hang. */
export async function withinPickup<T>(connection: Connection, pickupMs: number, call: () => Promise<T>): Promise<T> {
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(
        new ServiceError(
          'compute_unavailable',
          `No agent worker took the request up within ${pickupMs / 1000} seconds, or the compute service could not be reached.`,
        ),
      );
      abort.abort();
    }, pickupMs);
  });
  try {
    return await Promise.race([
      connection.withAbortSignal(abort.signal, () => connection.withDeadline(Date.now() + pickupMs, call)),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The longest the api waits for a run's answer while workers make progress on it: a run that
 * needs longer (a model answering slowly, step after step) is still read with GET /v1/agent/{id}. */
export const ANSWER_WAIT_MAX_MS = 10 * 60_000;

type Timestamp = { seconds?: { toString(): string } | number | null; nanos?: number | null } | null | undefined;
const tsMs = (ts: Timestamp): number | undefined =>
  ts?.seconds == null ? undefined : Number(ts.seconds.toString()) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);

/** 1 = PENDING_WORKFLOW_TASK_STATE_SCHEDULED and PENDING_ACTIVITY_STATE_SCHEDULED: waiting for a worker. */
const SCHEDULED = 1;

/** What the api reads of a run's description (DescribeWorkflowExecution's raw answer). */
export interface RunDescription {
  workflowExecutionInfo?: {
    execution?: { workflowId?: string | null; runId?: string | null } | null;
    type?: { name?: string | null } | null;
  } | null;
  pendingWorkflowTask?: { state?: number | null; scheduledTime?: Timestamp; attempt?: number | null } | null;
  pendingActivities?:
    | readonly {
        activityId?: string | null;
        state?: number | null;
        scheduledTime?: Timestamp;
        attempt?: number | null;
      }[]
    | null;
}

/** What Temporal says is waiting for a worker in a run, keyed so that a new attempt is a new key. */
function waitingForWorker(raw: RunDescription): Map<string, number | undefined> {
  const waiting = new Map<string, number | undefined>();
  const task = raw.pendingWorkflowTask;
  if (task?.state === SCHEDULED)
    waiting.set(`task:${task.attempt ?? 0}:${tsMs(task.scheduledTime) ?? ''}`, tsMs(task.scheduledTime));
  for (const a of raw.pendingActivities ?? []) {
    if (a.state === SCHEDULED)
      waiting.set(
        `activity:${a.activityId ?? ''}:${a.attempt ?? 0}:${tsMs(a.scheduledTime) ?? ''}`,
        tsMs(a.scheduledTime),
      );
  }
  return waiting;
}

const { temporal: proto } = protos;
const EVENT = proto.api.enums.v1.EventType;
const CAUSE = proto.api.enums.v1.WorkflowTaskFailedCause;
/** Causes of a failed workflow task that are part of normal work (a signal or an Update that came
 * during the task, a sticky queue reset, a reset), not a fault: the next attempt runs. */
const ROUTINE_CAUSES: ReadonlySet<number> = new Set([
  CAUSE.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
  CAUSE.WORKFLOW_TASK_FAILED_CAUSE_RESET_STICKY_TASK_QUEUE,
  CAUSE.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW,
  CAUSE.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_UPDATE,
  CAUSE.WORKFLOW_TASK_FAILED_CAUSE_FORCE_CLOSE_COMMAND,
  CAUSE.WORKFLOW_TASK_FAILED_CAUSE_FAILOVER_CLOSE_COMMAND,
]);

/** A run whose workflow task fails on the workers again and again: it makes no progress until a
 * worker that can run it is deployed (or the code's bug is fixed). */
export interface FailingWorkflowTask {
  readonly workflowType: string;
  /** Failed attempts so far (the pending attempt minus one). */
  readonly failures: number;
  /** Temporal's WorkflowTaskFailedCause without its prefix, lower case (a metric label). */
  readonly cause: string;
  /** What the cause means, for a person. */
  readonly explanation: string;
  /** The failure's own message as the worker reported it (for the operator's log only). */
  readonly detail: string;
}

function explain(cause: number): string {
  if (cause === CAUSE.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR) {
    return "the workers' workflow code does not replay the run's history (non-determinism: workflow code changed by a deploy without patched())";
  }
  if (cause === CAUSE.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE)
    return 'the workflow code throws an error on the workers';
  return `Temporal reports ${causeName(cause)}`;
}

const causeName = (cause: number): string =>
  (CAUSE[cause] ?? `cause ${cause}`).replace(/^WORKFLOW_TASK_FAILED_CAUSE_/, '').toLowerCase();

/**
 * Whether the run's workflow task is failing: a pending workflow task on its second attempt or
 * later, after a WorkflowTaskFailed of a cause that is not routine (Temporal records the first
 * failure of a series in the history, not the retries). A task that timed out (its worker died)
 * is not failing: another worker takes it over.
 */
export async function failingWorkflowTask(
  client: Client,
  raw: RunDescription,
): Promise<FailingWorkflowTask | undefined> {
  const attempt = raw.pendingWorkflowTask?.attempt ?? 0;
  const execution = raw.workflowExecutionInfo?.execution;
  if (attempt < 2 || !execution?.workflowId) return undefined;
  const { history } = await client.workflowService.getWorkflowExecutionHistoryReverse({
    namespace: client.options.namespace,
    execution,
    maximumPageSize: 50,
  });
  for (const event of history?.events ?? []) {
    if (
      event.eventType === EVENT.EVENT_TYPE_WORKFLOW_TASK_COMPLETED ||
      event.eventType === EVENT.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT
    )
      return undefined;
    if (event.eventType !== EVENT.EVENT_TYPE_WORKFLOW_TASK_FAILED) continue;
    const cause = event.workflowTaskFailedEventAttributes?.cause ?? CAUSE.WORKFLOW_TASK_FAILED_CAUSE_UNSPECIFIED;
    if (ROUTINE_CAUSES.has(cause)) return undefined;
    return {
      workflowType: raw.workflowExecutionInfo?.type?.name ?? 'unknown',
      failures: attempt - 1,
      cause: causeName(cause),
      explanation: explain(cause),
      detail: (event.workflowTaskFailedEventAttributes?.failure?.message ?? '').slice(0, 500),
    };
  }
  return undefined;
}

/** The 502 of a run whose workflow task is failing: compute_unavailable, as for a run no worker
 * takes up (the run keeps its state and goes on once a worker can run it; a retry with the same
 * Idempotency-Key joins it), with the real cause in the message. */
export class WorkflowTaskFailingError extends ServiceError {
  constructor(readonly failing: FailingWorkflowTask) {
    super('compute_unavailable', failingMessage(failing));
  }
}

/** What a client is told of a failing workflow task (the 502's message, and GET's `error`). */
export function failingMessage(failing: FailingWorkflowTask): string {
  return `The agent run cannot make progress: its workflow task has failed ${failing.failures} time${failing.failures === 1 ? '' : 's'} in a row on the agent workers (${failing.explanation}). Nothing more runs, and nothing more is charged, until the operators deploy workers that can run it; the run keeps its state and goes on then. GET /v1/agent/{id} with the X-Request-Id shows its state.`;
}

const logger = new Logger('agent');

/** Counts a failing workflow task the api reports (a 502 or a GET) and logs its cause for the operator. */
export function reportFailing(workflowId: string, failing: FailingWorkflowTask): void {
  workflowTasksFailing.inc({ workflow_type: failing.workflowType, cause: failing.cause });
  logger.warn(
    `workflow ${workflowId} (${failing.workflowType}) cannot make progress: its workflow task failed ${failing.failures} time(s), cause ${failing.cause}: ${failing.detail}`,
  );
}

/**
 * Waits for a run's answer (an Update's result) for as long as workers make progress on it, and
 * no longer: when a workflow task or an activity of the run has waited for a worker for more than
 * `pickupMs` (every worker gone, or killed mid-step with none to take over), when its workflow
 * task has been failing for that long (failingWorkflowTask: the 502 names the cause), when
 * Temporal cannot be reached for that long, or after ANSWER_WAIT_MAX_MS in all, it gives up with
 * compute_unavailable. Giving up changes nothing in the run: it goes on when a worker comes back.
 */
export async function awaitAnswer<T>(
  temporal: { connection: Connection; client: Client; describe: () => Promise<RunDescription> },
  pickupMs: number,
  wait: () => Promise<T>,
): Promise<T> {
  const abort = new AbortController();
  const seen = new Map<string, number>();
  let unreachableSince: number | undefined;
  let failingSince: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  let done = false;
  const startedAt = Date.now();
  const interval = Math.min(Math.max(pickupMs / 2, 250), 5_000);
  const failingError = (raw: RunDescription, failing: FailingWorkflowTask): ServiceError => {
    reportFailing(raw.workflowExecutionInfo?.execution?.workflowId ?? 'unknown', failing);
    return new WorkflowTaskFailingError(failing);
  };
  const stalled = (why: string): ServiceError =>
    new ServiceError(
      'compute_unavailable',
      `The agent run stopped making progress (${why}); it goes on when a worker takes it up again. GET /v1/agent/{id} with the X-Request-Id shows its state.`,
    );
  const watchdog = new Promise<never>((_, reject) => {
    const check = async (): Promise<void> => {
      const now = Date.now();
      if (now - startedAt >= ANSWER_WAIT_MAX_MS)
        return reject(stalled(`no answer within ${ANSWER_WAIT_MAX_MS / 60_000} minutes`));
      try {
        const raw = await temporal.connection.withDeadline(now + pickupMs, temporal.describe);
        const failing = await temporal.connection.withDeadline(now + pickupMs, () =>
          failingWorkflowTask(temporal.client, raw),
        );
        unreachableSince = undefined;
        // A failing task is retried by Temporal (each attempt a new key below): it fails once it
        // has been failing for the pickup time, with its cause.
        failingSince = failing ? (failingSince ?? now) : undefined;
        if (failing && now - failingSince! >= pickupMs) return reject(failingError(raw, failing));
        const waiting = waitingForWorker(raw);
        for (const key of seen.keys()) if (!waiting.has(key)) seen.delete(key);
        for (const [key, scheduledAt] of waiting) {
          const firstSeen = seen.get(key) ?? now;
          seen.set(key, firstSeen);
          // Both clocks must agree that it waited: ours (no skew) and the server's (a step that
          // was waiting before we looked, or an activity retry's backoff, which is SCHEDULED too).
          if (now - firstSeen >= pickupMs && (scheduledAt === undefined || now - scheduledAt >= pickupMs)) {
            return reject(
              failing
                ? failingError(raw, failing)
                : stalled(`no agent worker took up its next step within ${pickupMs / 1000} seconds`),
            );
          }
        }
      } catch {
        unreachableSince ??= now;
        if (now - unreachableSince >= pickupMs) return reject(stalled('the compute service could not be reached'));
      }
      if (!done) timer = setTimeout(() => void check(), interval);
    };
    timer = setTimeout(() => void check(), interval);
  });
  try {
    return await Promise.race([temporal.connection.withAbortSignal(abort.signal, wait), watchdog]);
  } finally {
    done = true;
    clearTimeout(timer);
    abort.abort();
  }
}

/** A compute_unavailable that came from waiting on a run, with the real cause when the run's
 * workflow task is failing (withinPickup knows only that nothing answered in time). */
export async function withFailingCause(
  error: ServiceError,
  client: Client,
  describe: () => Promise<RunDescription>,
): Promise<ServiceError> {
  if (error.code !== 'compute_unavailable' || error instanceof WorkflowTaskFailingError) return error;
  try {
    const raw = await client.connection.withDeadline(Date.now() + 5_000, describe);
    const failing = await client.connection.withDeadline(Date.now() + 5_000, () => failingWorkflowTask(client, raw));
    if (!failing) return error;
    reportFailing(raw.workflowExecutionInfo?.execution?.workflowId ?? 'unknown', failing);
    return new WorkflowTaskFailingError(failing);
  } catch {
    return error;
  }
}
