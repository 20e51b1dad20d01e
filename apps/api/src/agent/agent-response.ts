import type { Response } from 'express';
import type { Principal } from '#libs/accounts';
import type { AppConfig } from '#libs/config';
import { ServiceError, type AgentStop, type PlanName, type ResponseFile, type ToolCall } from '#libs/contracts';
import { quotaFigures } from '#libs/metering';
import type { FileStore } from '#libs/persistence';

/** AgentResponse (contract section 2.4), also the session message response (2.10). */
export interface AgentResponse {
  id: string;
  object: 'agent.response' | 'session.message';
  session_id?: string;
  status: AgentStop['status'];
  message?: string;
  tool_calls?: readonly ToolCall[];
  capabilities_used: readonly string[];
  files: readonly ResponseFile[];
  usage: { credits_this_request: number; credits_remaining: number; tokens_used: number };
  meta: { duration_ms: number; project_id: string; plan: PlanName };
  _compute_instance: string;
  error?: { code: string; message: string };
}

export interface RenderContext {
  readonly object: AgentResponse['object'];
  readonly sessionId?: string;
  readonly computeInstance: string;
  readonly startedAt: number;
  readonly plan: PlanName;
}

/** The generated files of a stop with their content (text as is, binary as base64) and download URL. */
export async function responseFiles(stop: AgentStop, store: FileStore, config: Pick<AppConfig, 'publicBaseUrl'>): Promise<ResponseFile[]> {
  const files: ResponseFile[] = [];
  for (const ref of stop.files) {
    const file = await store.get(ref.id, stop.projectId);
    if (file) files.push({ name: file.name, content: file.content, url: `${config.publicBaseUrl}/v1/files/${file.id}` });
  }
  return files;
}

/** The contract's view of a stop. `message` when completed, `tool_calls` when paused. */
export function renderStop(stop: AgentStop, ctx: RenderContext, files: readonly ResponseFile[]): AgentResponse {
  return {
    id: stop.requestId,
    object: ctx.object,
    ...(ctx.sessionId ? { session_id: ctx.sessionId } : {}),
    status: stop.status,
    ...(stop.status === 'completed' ? { message: stop.message ?? '' } : {}),
    ...(stop.status === 'requires_tool_outputs' ? { tool_calls: stop.toolCalls ?? [] } : {}),
    capabilities_used: stop.capabilitiesUsed,
    files,
    usage: { credits_this_request: stop.creditsThisRequest, credits_remaining: stop.creditsRemaining, tokens_used: stop.tokensUsed },
    meta: { duration_ms: Math.max(0, Math.round(performance.now() - ctx.startedAt)), project_id: stop.projectId, plan: ctx.plan },
    _compute_instance: ctx.computeInstance,
    ...(stop.status === 'failed' && stop.error ? { error: stop.error } : {}),
  };
}

/** A stop that answers a POST: a failed run becomes its contract error instead of a 200. */
export function requireSuccessfulStop(stop: AgentStop, principal: Principal): AgentStop {
  if (stop.status === 'failed') {
    const code = stop.error?.code ?? 'compute_error';
    // A used-up quota comes back when the billing period ends.
    const headers: Record<string, string> = code === 'quota_exceeded' ? { 'Retry-After': String(quotaFigures(principal.project.periodStart, 0, 0).retryAfterSeconds) } : {};
    throw new ServiceError(code, stop.error?.message ?? 'The agent run failed.', headers);
  }
  if (stop.status === 'expired') {
    throw new ServiceError('context_expired', 'The tool execution context has expired.');
  }
  return stop;
}

/** X-Request-Id and the quota headers of every 200 (contract section 4.1). */
export function setResponseHeaders(res: Response, requestId: string, principal: Principal, monthlyQuota: number, requestsUsed: number): void {
  const quota = quotaFigures(principal.project.periodStart, monthlyQuota, requestsUsed);
  res.setHeader('X-Request-Id', requestId);
  res.setHeader('X-RateLimit-Limit', String(quota.limit));
  res.setHeader('X-RateLimit-Remaining', String(quota.remaining));
  res.setHeader('X-RateLimit-Reset', String(quota.reset));
}
