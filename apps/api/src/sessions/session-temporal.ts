import type { Connection } from '@temporalio/client';
import { ServiceError } from '#libs/contracts';
import { fromTemporalError } from '../agent/temporal-errors.js';
import type { SessionsRepository } from './sessions.repository.js';
import { closedSessionError, sessionNotFound } from './session-resource.js';

/** Runs a Temporal call bounded as a whole (the connection phase included), so a missing worker or
 * an unreachable Temporal becomes compute_unavailable instead of a hang. */
export async function withinPickup<T>(connection: Connection, pickupMs: number, call: () => Promise<T>): Promise<T> {
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new ServiceError('compute_unavailable', `No agent worker took the session's request up within ${pickupMs / 1000} seconds, or the compute service could not be reached.`));
      abort.abort();
    }, pickupMs);
  });
  try {
    return await Promise.race([connection.withAbortSignal(abort.signal, () => connection.withDeadline(Date.now() + pickupMs, call)), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** What a failed call to a session workflow means for the caller: the workflow's own refusal (its
 * contract code), or, when the workflow is gone, what the read model says happened to the session. */
export async function sessionCallError(e: unknown, sessions: SessionsRepository, projectId: string, sessionId: string): Promise<ServiceError> {
  const error = fromTemporalError(e, 'session_not_found');
  if (error.code !== 'session_not_found') return error;
  const record = await sessions.find(projectId, sessionId);
  if (!record) return sessionNotFound();
  // A row still active with no running workflow: an operator stopped it.
  return closedSessionError(record.status) ?? new ServiceError('session_ended', 'The session is no longer running. Start a new session.');
}
