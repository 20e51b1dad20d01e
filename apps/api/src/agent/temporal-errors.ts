import { type Connection, ServiceError as TemporalServiceError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import { isErrorCode, ServiceError, type ErrorCode } from '#libs/contracts';

/** gRPC status codes that mean the request never reached a running workflow. */
const NOT_FOUND = 5;

/** Turns what the Temporal client threw into a contract error. `notFound` is the code for an
 * unknown or finished workflow (context_expired for tool outputs, request_not_found for reads). */
export function fromTemporalError(e: unknown, notFound: ErrorCode): ServiceError {
  if (e instanceof ServiceError) return e;
  if (e instanceof WorkflowNotFoundError) return new ServiceError(notFound, notFoundMessage(notFound));
  if (e instanceof WorkflowUpdateFailedError) {
    const cause = e.cause;
    if (cause instanceof ApplicationFailure && isErrorCode(cause.type)) return new ServiceError(cause.type, cause.message);
    return new ServiceError('compute_error', 'The agent run failed.');
  }
  if (e instanceof WorkflowUpdateRPCTimeoutOrCancelledError) {
    return new ServiceError('compute_unavailable', 'The agent did not answer in time; the compute service may be overloaded.');
  }
  const grpcCode = (e as { code?: unknown } | null)?.code ?? (e instanceof TemporalServiceError ? (e.cause as { code?: unknown } | undefined)?.code : undefined);
  const text = e instanceof Error ? e.message : String(e);
  // An Update sent to a closed workflow is refused with NOT_FOUND ("workflow execution already completed").
  if (grpcCode === NOT_FOUND || /already completed|not found/i.test(text)) return new ServiceError(notFound, notFoundMessage(notFound));
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
      reject(new ServiceError('compute_unavailable', `No agent worker took the request up within ${pickupMs / 1000} seconds, or the compute service could not be reached.`));
      abort.abort();
    }, pickupMs);
  });
  try {
    return await Promise.race([connection.withAbortSignal(abort.signal, () => connection.withDeadline(Date.now() + pickupMs, call)), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The longest the api waits for a run's answer while workers make progress on it: a run that
 * needs longer (a model answering slowly, step after step) is still read with GET /v1/agent/{id}. */
export const ANSWER_WAIT_MAX_MS = 10 * 60_000;

type Timestamp = { seconds?: { toString(): string } | number | null; nanos?: number | null } | null | undefined;
const tsMs = (ts: Timestamp): number | undefined => (ts?.seconds == null ? undefined : Number(ts.seconds.toString()) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6));

/** 1 = PENDING_WORKFLOW_TASK_STATE_SCHEDULED and PENDING_ACTIVITY_STATE_SCHEDULED: waiting for a worker. */
const SCHEDULED = 1;

/** What Temporal says is waiting for a worker in a run, keyed so that a new attempt is a new key. */
function waitingForWorker(raw: {
  pendingWorkflowTask?: { state?: number | null; scheduledTime?: Timestamp; attempt?: number | null } | null;
  pendingActivities?: readonly { activityId?: string | null; state?: number | null; scheduledTime?: Timestamp; attempt?: number | null }[] | null;
}): Map<string, number | undefined> {
  const waiting = new Map<string, number | undefined>();
  const task = raw.pendingWorkflowTask;
  if (task?.state === SCHEDULED) waiting.set(`task:${task.attempt ?? 0}:${tsMs(task.scheduledTime) ?? ''}`, tsMs(task.scheduledTime));
  for (const a of raw.pendingActivities ?? []) {
    if (a.state === SCHEDULED) waiting.set(`activity:${a.activityId ?? ''}:${a.attempt ?? 0}:${tsMs(a.scheduledTime) ?? ''}`, tsMs(a.scheduledTime));
  }
  return waiting;
}

/**
 * Waits for a run's answer (an Update's result) for as long as workers make progress on it, and
 * no longer: when a workflow task or an activity of the run has waited for a worker for more than
 * `pickupMs` (every worker gone, or killed mid-step with none to take over), when Temporal cannot
 * be reached for that long, or after ANSWER_WAIT_MAX_MS in all, it gives up with
 * compute_unavailable. Giving up changes nothing in the run: it goes on when a worker comes back.
 */
export async function awaitAnswer<T>(
  temporal: { connection: Connection; describe: () => Promise<Parameters<typeof waitingForWorker>[0]> },
  pickupMs: number,
  wait: () => Promise<T>,
): Promise<T> {
  const abort = new AbortController();
  const seen = new Map<string, number>();
  let unreachableSince: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  let done = false;
  const startedAt = Date.now();
  const interval = Math.min(Math.max(pickupMs / 2, 250), 5_000);
  const stalled = (why: string): ServiceError =>
    new ServiceError('compute_unavailable', `The agent run stopped making progress (${why}); it goes on when a worker takes it up again. GET /v1/agent/{id} with the X-Request-Id shows its state.`);
  const watchdog = new Promise<never>((_, reject) => {
    const check = async (): Promise<void> => {
      const now = Date.now();
      if (now - startedAt >= ANSWER_WAIT_MAX_MS) return reject(stalled(`no answer within ${ANSWER_WAIT_MAX_MS / 60_000} minutes`));
      try {
        const raw = await temporal.connection.withDeadline(now + pickupMs, temporal.describe);
        unreachableSince = undefined;
        const waiting = waitingForWorker(raw);
        for (const key of seen.keys()) if (!waiting.has(key)) seen.delete(key);
        for (const [key, scheduledAt] of waiting) {
          const firstSeen = seen.get(key) ?? now;
          seen.set(key, firstSeen);
          // Both clocks must agree that it waited: ours (no skew) and the server's (a step that
          // was waiting before we looked, or an activity retry's backoff, which is SCHEDULED too).
          if (now - firstSeen >= pickupMs && (scheduledAt === undefined || now - scheduledAt >= pickupMs)) {
            return reject(stalled(`no agent worker took up its next step within ${pickupMs / 1000} seconds`));
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
