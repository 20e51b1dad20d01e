import type { AppConfig } from '#libs/config';
import type { AgentStop, PlanName, ResponseFile, ToolCall } from '#libs/contracts';
import type { FileStore } from '#libs/persistence';
import { computeInstanceOf } from './compute-instance.js';

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

interface RenderContext {
  readonly object: AgentResponse['object'];
  readonly sessionId?: string;
  readonly computeInstance: string;
  readonly startedAt: number;
  readonly plan: PlanName;
}

/** The generated files of a stop with their content (text as is, binary as base64) and download URL. */
export async function responseFiles(
  stop: AgentStop,
  store: FileStore,
  config: Pick<AppConfig, 'publicBaseUrl'>,
): Promise<ResponseFile[]> {
  const files: ResponseFile[] = [];
  for (const ref of stop.files) {
    const file = await store.get(ref.id, stop.projectId);
    if (file)
      files.push({ name: file.name, content: file.content, url: `${config.publicBaseUrl}/v1/files/${file.id}` });
  }
  return files;
}

/** What renders a stop: where its files are, the configuration (download URLs, the compute
 * instance), the project's plan, and when the call began (`meta.duration_ms`). */
export interface StopRendering {
  readonly files: FileStore;
  readonly config: Pick<AppConfig, 'publicBaseUrl' | 'temporal'>;
  readonly plan: PlanName;
  readonly startedAt: number;
}

/** A stop as the contract's AgentResponse, its files included: the one renderer of a stop, for the
 * api's answers (POST, GET, cancel) and the worker's webhooks alike. A session's request is a
 * `session.message`, through its tool-output continuations too. */
export async function renderAgentResponse(stop: AgentStop, ctx: StopRendering): Promise<AgentResponse> {
  const files = await responseFiles(stop, ctx.files, ctx.config);
  const object = stop.sessionId ? 'session.message' : 'agent.response';
  return renderStop(
    stop,
    {
      object,
      sessionId: stop.sessionId,
      computeInstance: computeInstanceOf(ctx.config),
      startedAt: ctx.startedAt,
      plan: ctx.plan,
    },
    files,
  );
}

/** The contract's view of a stop. `message` when completed (and, partial, when cancelled),
 * `tool_calls` when paused. */
function renderStop(stop: AgentStop, ctx: RenderContext, files: readonly ResponseFile[]): AgentResponse {
  return {
    id: stop.requestId,
    object: ctx.object,
    ...(ctx.sessionId ? { session_id: ctx.sessionId } : {}),
    status: stop.status,
    ...(stop.status === 'completed' || stop.status === 'cancelled' ? { message: stop.message ?? '' } : {}),
    ...(stop.status === 'requires_tool_outputs' ? { tool_calls: stop.toolCalls ?? [] } : {}),
    capabilities_used: stop.capabilitiesUsed,
    files,
    usage: {
      credits_this_request: stop.creditsThisRequest,
      credits_remaining: stop.creditsRemaining,
      tokens_used: stop.tokensUsed,
    },
    meta: {
      duration_ms: Math.max(0, Math.round(performance.now() - ctx.startedAt)),
      project_id: stop.projectId,
      plan: ctx.plan,
    },
    _compute_instance: ctx.computeInstance,
    // A failed run's error; on a run still in progress or paused, why it cannot make progress now.
    ...((stop.status === 'failed' || stop.status === 'in_progress' || stop.status === 'requires_tool_outputs') &&
    stop.error
      ? { error: stop.error }
      : {}),
  };
}
