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
