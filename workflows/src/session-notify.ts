import { getExternalWorkflowHandle, log } from '@temporalio/workflow';
import { sessionRequestStopSignal, sessionWorkflowId, type AgentStop } from '#libs/contracts';

/** Sessions: a session's request tells its session that it paused (the session answers its caller
 * with the pause and keeps its idle timer still) and that it ended (the session takes the next
 * message from then on; the request's result follows as the child's). A session that is gone does
 * not stop the request. */
export async function notifySession(sessionId: string, stop: AgentStop): Promise<void> {
  try {
    await getExternalWorkflowHandle(sessionWorkflowId(sessionId)).signal(sessionRequestStopSignal, stop);
  } catch (e) {
    log.warn('could not tell the session about a stop', {
      sessionId,
      requestId: stop.requestId,
      error: e instanceof Error ? e.message : String(e),
    });
  }
}
