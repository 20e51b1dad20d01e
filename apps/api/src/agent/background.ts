import type { QueryBus } from '@nestjs/cqrs';
import { initialStop, type AgentStop } from '#libs/contracts';
import type { SseResponder } from '../streaming/sse-responder.js';
import { stopAnswer, withRequestId, type StopAnswerContext } from './agent-response.js';
import type { StoredAnswer } from './idempotency.js';
import { GetAgentRequestQuery } from './queries/get-agent-request.query.js';

export interface BackgroundStart {
  readonly requestId: string;
  readonly firstStop: Promise<AgentStop>;
  readonly sessionId?: string;
  /** A retry with an Idempotency-Key whose first attempt counted the request already. */
  readonly duplicate: boolean;
}

/**
 * The answer to `"background": true` (DESIGN.md section 9): 200 with `in_progress` as soon as the run
 * was admitted, whatever it does next. A run refused before it ran (402 `insufficient_credits`, 429
 * `quota_exceeded`, 502) is answered as that error, exactly as without `background`, so a 200 always
 * means a run that goes on. The run's events are recorded (it runs as a streamed one), for
 * GET /v1/agent/{id}/events; its result is read with GET /v1/agent/{id}.
 */
export async function backgroundAnswer(sse: SseResponder, queries: QueryBus, started: BackgroundStart, ctx: StopAnswerContext): Promise<StoredAnswer> {
  const { requestId, firstStop } = started;
  const unadmitted = await sse.unadmittedStop(requestId, firstStop, ctx.config.temporal.pickupTimeoutMs);
  if (unadmitted && 'error' in unadmitted) throw withRequestId(unadmitted.error, requestId);
  if (unadmitted) return stopAnswer(unadmitted.stop, { ...ctx, requestsUsed: unadmitted.stop.requestsUsed });
  // Admitted (or still waiting for a worker, which GET then shows): the figures after admission.
  const read: AgentStop | undefined = await queries.execute(new GetAgentRequestQuery(ctx.principal, requestId)).catch(() => undefined);
  const stop: AgentStop = {
    ...initialStop({ requestId, projectId: ctx.principal.project.id, ...(started.sessionId ? { sessionId: started.sessionId } : {}) }),
    creditsRemaining: read?.creditsRemaining ?? ctx.principal.project.creditBalance,
    // 0 before admission (no worker has taken the run up yet): the headers count this request, as a stream's do.
    requestsUsed: read?.requestsUsed || ctx.principal.project.requestsUsed + (started.duplicate ? 0 : 1),
  };
  return stopAnswer(stop, { ...ctx, requestsUsed: stop.requestsUsed });
}
