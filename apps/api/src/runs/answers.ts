import type { Response } from 'express';
import type { Principal } from '#libs/accounts';
import type { AppConfig } from '#libs/config';
import { initialStop, ServiceError, type AgentError, type AgentStop } from '#libs/contracts';
import { billingAnchor, quotaFigures } from '#libs/metering';
import type { FileStore } from '#libs/persistence';
import { renderError } from '../errors/contract-exception.filter.js';
import { renderAgentResponse, type AgentResponse } from '#libs/resources';
import type { StoredAnswer } from './idempotency.js';

/** A run's error (a failed stop's, or an admission's refusal) as its contract error: a used-up
 * quota comes back when the billing period ends, a cap when `retryAfterSeconds` have passed. */
export function runError(
  error: AgentError | undefined,
  principal: Principal,
  retryAfterSeconds?: number,
): ServiceError {
  const code = error?.code ?? 'compute_error';
  const headers: Record<string, string> =
    code === 'quota_exceeded'
      ? { 'Retry-After': String(quotaFigures(billingAnchor(principal.project.createdAt), 0, 0).retryAfterSeconds) }
      : retryAfterSeconds
        ? { 'Retry-After': String(retryAfterSeconds) }
        : {};
  return new ServiceError(code, error?.message ?? 'The agent run failed.', headers);
}

/** A stop that answers a POST: a failed run becomes its contract error instead of a 200. */
export function requireSuccessfulStop(stop: AgentStop, principal: Principal): AgentStop {
  if (stop.status === 'failed') throw runError(stop.error, principal);
  if (stop.status === 'expired') {
    throw new ServiceError('context_expired', 'The tool execution context has expired.');
  }
  return stop;
}

/** X-Request-Id and the quota headers of every 200 (contract section 4.1). */
export function responseHeaders(
  requestId: string,
  principal: Principal,
  monthlyQuota: number,
  requestsUsed: number,
): Record<string, string> {
  const quota = quotaFigures(billingAnchor(principal.project.createdAt), monthlyQuota, requestsUsed);
  return {
    'X-Request-Id': requestId,
    'X-RateLimit-Limit': String(quota.limit),
    'X-RateLimit-Remaining': String(quota.remaining),
    'X-RateLimit-Reset': String(quota.reset),
  };
}

export function setResponseHeaders(
  res: Response,
  requestId: string,
  principal: Principal,
  monthlyQuota: number,
  requestsUsed: number,
): void {
  for (const [name, value] of Object.entries(responseHeaders(requestId, principal, monthlyQuota, requestsUsed)))
    res.setHeader(name, value);
}

/** Sends an answer (a fresh one or an Idempotency-Key replay) exactly as it is. */
export function sendAnswer(res: Response, answer: StoredAnswer): void {
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  res.status(answer.status).json(answer.body);
}

/** A contract error as an answer that can be saved and replayed, with the request id it concerns. */
export function errorAnswer(error: ServiceError, publicBaseUrl: string, requestId: string): StoredAnswer {
  const { status, body } = renderError(error, publicBaseUrl);
  return { status, headers: { ...error.headers, 'X-Request-Id': requestId }, body };
}

/** The error with `X-Request-Id` among its headers: a caller told 502 about a request that may
 * have started can read it (GET /v1/agent/{id}) or retry it with its Idempotency-Key. */
export function withRequestId(e: unknown, requestId: string): unknown {
  if (!(e instanceof ServiceError) || e.headers['X-Request-Id'] !== undefined) return e;
  return new ServiceError(e.code, e.message, { ...e.headers, 'X-Request-Id': requestId });
}

/** What renders a stop: the api's configuration, the file store (for the response's files), who
 * asked and when the call began (the response's timing). */
export interface RenderContext {
  readonly config: Pick<AppConfig, 'publicBaseUrl' | 'plans' | 'temporal'>;
  readonly files: FileStore;
  readonly principal: Principal;
  readonly startedAt: number;
}

/** A stop as the contract's AgentResponse for the api (POST answers, GET, cancel), with the asking
 * project's plan: libs/resources' renderer, which the worker's webhooks use too. */
export function renderResponse(stop: AgentStop, ctx: RenderContext): Promise<AgentResponse> {
  return renderAgentResponse(stop, {
    files: ctx.files,
    config: ctx.config,
    plan: ctx.principal.project.plan,
    startedAt: ctx.startedAt,
  });
}

/** What renders a stop as the answer to a POST. */
export interface StopAnswerContext extends RenderContext {
  /** The quota counter the headers show (the stop's own for a request that was admitted). */
  readonly requestsUsed: number;
}

/** A stop as the answer to a POST: 200 with the AgentResponse (`session.message` for a session's
 * request), or the failed run's contract error. */
export async function stopAnswer(stop: AgentStop, ctx: StopAnswerContext): Promise<StoredAnswer> {
  const { config, principal } = ctx;
  try {
    requireSuccessfulStop(stop, principal);
  } catch (e) {
    if (e instanceof ServiceError) return errorAnswer(e, config.publicBaseUrl, stop.requestId);
    throw e;
  }
  const body = await renderResponse(stop, ctx);
  return {
    status: 200,
    headers: responseHeaders(
      stop.requestId,
      principal,
      config.plans[principal.project.plan].monthlyQuota,
      ctx.requestsUsed,
    ),
    body,
  };
}

/**
 * The answer to `"background": true` (DESIGN.md section 9): 200 with `in_progress` as soon as the run
 * was admitted, whatever it does next. A run refused before it ran (402 `insufficient_credits`, 429
 * `quota_exceeded`, 502) is answered as that error, exactly as without `background`, so a 200 always
 * means a run that goes on. The run's events are recorded (it runs as a streamed one), for
 * GET /v1/agent/{id}/events; its result is read with GET /v1/agent/{id}. `unadmitted` is what the
 * wait for admission found (SseResponder.unadmittedStop); `read` the run's state once admitted.
 */
export async function backgroundAnswer(
  run: { readonly requestId: string; readonly sessionId?: string; readonly duplicate: boolean },
  unadmitted: { stop: AgentStop } | { error: unknown } | undefined,
  read: () => Promise<AgentStop | undefined>,
  ctx: RenderContext,
): Promise<StoredAnswer> {
  const { requestId } = run;
  if (unadmitted && 'error' in unadmitted) throw withRequestId(unadmitted.error, requestId);
  if (unadmitted) return stopAnswer(unadmitted.stop, { ...ctx, requestsUsed: unadmitted.stop.requestsUsed });
  // Admitted (or still waiting for a worker, which GET then shows): the figures after admission.
  const current = await read();
  const stop: AgentStop = {
    ...initialStop({
      requestId,
      projectId: ctx.principal.project.id,
      ...(run.sessionId ? { sessionId: run.sessionId } : {}),
    }),
    creditsRemaining: current?.creditsRemaining ?? ctx.principal.project.creditBalance,
    // 0 before admission (no worker has taken the run up yet): the headers count this request, as a stream's do.
    requestsUsed: current?.requestsUsed || ctx.principal.project.requestsUsed + (run.duplicate ? 0 : 1),
  };
  return stopAnswer(stop, { ...ctx, requestsUsed: stop.requestsUsed });
}
