import { ServiceError } from '#libs/contracts';
import { fromTemporalError } from '../runs/temporal-errors.js';
export { withinPickup } from '../runs/temporal-errors.js';
import type { SessionsRepository } from './sessions.repository.js';
import { closedSessionError, sessionNotFound } from './session-resource.js';

/** What a failed call to a session workflow means for the caller: the workflow's own refusal (its
 * contract code), or, when the workflow is gone, what the read model says happened to the session. */
export async function sessionCallError(
  e: unknown,
  sessions: SessionsRepository,
  projectId: string,
  sessionId: string,
): Promise<ServiceError> {
  const error = fromTemporalError(e, 'session_not_found');
  if (error.code !== 'session_not_found') return error;
  const record = await sessions.find(projectId, sessionId);
  if (!record) return sessionNotFound();
  // A row still active with no running workflow: an operator stopped it.
  return (
    closedSessionError(record.status) ??
    new ServiceError('session_ended', 'The session is no longer running. Start a new session.')
  );
}
