import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { offeredTools } from '#libs/contracts';
import type {
  AgentError,
  AgentRequestInput,
  AgentStatus,
  AgentStop,
  BuiltinTool,
  Capability,
  ChatMessage,
  FileRef,
  FirstRecordedStop,
  ModelStep,
  OfferedTool,
  StopRecord,
  ToolCall,
  ToolCallRef,
  ToolDefinition,
  ToolOutputsSubmission,
} from '#libs/contracts';

// The decisions of the agent loop, pure: which step comes after a model call, what a stop looks
// like, which tool outputs are acceptable. The workflow (agent-request.workflow.ts) orders the
// steps and their durable waits; activities do the I/O. No Temporal API and no I/O here.

/** Model calls one leg may make before it is stopped as a runaway. */
export const MAX_MODEL_CALLS_PER_LEG = 12;

/** The tools of a request as the loop sees them. */
export interface LoopTools {
  /** The caller's own tools: a call to one pauses the request. */
  readonly custom: ReadonlySet<string>;
  /** Built-in tools offered, by name, with the capability each belongs to. */
  readonly capabilityOf: ReadonlyMap<string, Capability>;
}

/** The tools offered to the model (the caller's first), and the loop's view of them. */
export function offerTools(
  custom: readonly ToolDefinition[],
  builtin: readonly BuiltinTool[],
): { offered: OfferedTool[]; loop: LoopTools } {
  return {
    offered: offeredTools(custom, builtin),
    loop: {
      custom: new Set(custom.map((t) => t.name)),
      capabilityOf: new Map(builtin.map((t) => [t.name, t.capability] as const)),
    },
  };
}

/** What to do with one tool call of a turn that runs built-in tools. */
export type ToolAction =
  | { readonly kind: 'run'; readonly call: ToolCallRef; readonly capability: Capability }
  | { readonly kind: 'answer'; readonly message: ChatMessage };

/** What the agent does after a model step. */
export type NextStep =
  /** The model answered: the request completes with this text. */
  | { readonly kind: 'reply'; readonly text: string }
  /** The model called the caller's tools: pause for their outputs. Built-in calls of the same turn
   * are not run; `answers` tell the model so (stored before the outputs). */
  | { readonly kind: 'pause'; readonly toolCalls: readonly ToolCall[]; readonly answers: readonly ChatMessage[] }
  /** Run built-in tools (or answer unknown ones), in call order, then call the model again. */
  | { readonly kind: 'tools'; readonly actions: readonly ToolAction[] }
  /** Fail the run: a runaway (the leg would need more than MAX_MODEL_CALLS_PER_LEG model calls),
   * or a step that failed. */
  | { readonly kind: 'fail'; readonly error: AgentError };

/** How a leg (model calls and built-in tools between two stops) ends. */
export type LegEnd = Exclude<NextStep, { readonly kind: 'tools' }>;

const toolMessage = (call: ToolCallRef, content: string): ChatMessage => ({
  role: 'tool',
  toolCallId: call.id,
  name: call.name,
  content,
});

/** The step after the `modelCalls`-th model call of a leg returned `step`. */
export function nextStep(step: ModelStep, tools: LoopTools, modelCalls: number): NextStep {
  if (step.toolCalls.length === 0) return { kind: 'reply', text: step.reply ?? '' };
  const custom = step.toolCalls.filter((c) => tools.custom.has(c.name));
  if (custom.length > 0) {
    return {
      kind: 'pause',
      toolCalls: custom.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments ?? {} })),
      answers: step.toolCalls
        .filter((c) => !tools.custom.has(c.name))
        .map((c) => toolMessage(c, 'This tool was not run: answer the custom tool calls first.')),
    };
  }
  if (modelCalls >= MAX_MODEL_CALLS_PER_LEG) {
    return {
      kind: 'fail',
      error: {
        code: 'compute_error',
        message: `The agent did not finish within ${MAX_MODEL_CALLS_PER_LEG} model calls.`,
      },
    };
  }
  return {
    kind: 'tools',
    actions: step.toolCalls.map((call): ToolAction => {
      const capability = tools.capabilityOf.get(call.name);
      return capability
        ? { kind: 'run', call, capability }
        : { kind: 'answer', message: toolMessage(call, `Unknown tool "${call.name}".`) };
    }),
  };
}

/** The tool messages that answer paused calls with the caller's outputs (a blob marker for a long one). */
export function outputMessages(paused: readonly ToolCall[], outputs: ReadonlyMap<string, string>): ChatMessage[] {
  return paused.map((call) => toolMessage(call, outputs.get(call.id) ?? ''));
}

/** The completed message: the reply, and at the first stop the notes on capabilities the caller
 * named but cannot have. */
export function completedMessage(
  reply: string,
  notes: readonly string[],
  options: { firstStop: boolean; capabilitiesRequested: boolean },
): string {
  return options.firstStop && options.capabilitiesRequested && notes.length > 0
    ? `${reply}\n\n${notes.join('\n')}`
    : reply;
}

/** A stop that failed with `error`, charging nothing (a session's request that could not run). */
export function failedStop(before: AgentStop, error: AgentError): AgentStop {
  return { ...before, status: 'failed', stop: before.stop + 1, creditsThisRequest: 0, error };
}

/**
 * What a request has used so far (capabilities, generated files) and what its current leg (the
 * model calls and tools between two stops) has cost in tokens: the figures of its stops.
 */
export class Tally {
  private readonly used = new Set<Capability>();
  private readonly files: FileRef[] = [];
  private inputTokens = 0;
  private outputTokens = 0;

  modelStep(step: ModelStep): void {
    this.used.add('chat');
    this.inputTokens += step.usage.inputTokens;
    this.outputTokens += step.usage.outputTokens;
  }

  /** The model call cut short by a cancellation had streamed tokens: the model answered (and the
   * customer received them), so the run counts as one whose model answered. */
  streamedAnswer(): void {
    this.used.add('chat');
  }

  tool(capability: Capability, files: readonly FileRef[]): void {
    this.used.add(capability);
    this.files.push(...files);
  }

  /** What the metering records for stop number `stop`. */
  stopRecord(
    request: AgentRequestInput,
    stop: number,
    status: Exclude<AgentStatus, 'in_progress'>,
    error?: AgentError,
  ): StopRecord {
    return {
      requestId: request.requestId,
      projectId: request.projectId,
      ...(request.sessionId ? { sessionId: request.sessionId } : {}),
      plan: request.plan,
      stop,
      status,
      capabilitiesUsed: [...this.used],
      surcharges: request.surcharges,
      inputTokens: this.inputTokens,
      outputTokens: this.outputTokens,
      ...(error ? { errorCode: error.code } : {}),
    };
  }

  /** The stop after `state` once the metering recorded it; the next leg starts from zero tokens. */
  nextStop(
    state: AgentStop,
    status: Exclude<AgentStatus, 'in_progress'>,
    patch: Partial<AgentStop>,
    recorded: { creditsThisRequest: number; creditsRemaining: number },
  ): AgentStop {
    const tokensUsed = this.inputTokens + this.outputTokens;
    this.inputTokens = this.outputTokens = 0;
    return {
      ...state,
      ...patch,
      status,
      stop: state.stop + 1,
      capabilitiesUsed: [...this.used],
      files: [...this.files],
      tokensUsed,
      ...recorded,
    };
  }

  /** The stop after `state` as it was first recorded (a re-run of the step adopts it in place of
   * its own outcome); the next leg starts from zero tokens. */
  adoptStop(
    state: AgentStop,
    first: FirstRecordedStop,
    charge: { creditsThisRequest: number; creditsRemaining: number },
  ): AgentStop {
    this.inputTokens = this.outputTokens = 0;
    for (const capability of first.capabilitiesUsed) this.used.add(capability);
    const { message, toolCalls, error, requestsUsed } = first.view;
    return {
      ...state,
      status: first.status,
      stop: state.stop + 1,
      message,
      toolCalls,
      error,
      requestsUsed: requestsUsed ?? state.requestsUsed,
      capabilitiesUsed: [...first.capabilitiesUsed],
      files: [...this.files],
      tokensUsed: first.tokensUsed,
      creditsThisRequest: charge.creditsThisRequest,
      creditsRemaining: charge.creditsRemaining,
    };
  }
}

export { endEvents } from '#libs/contracts';

/** Why a tool-outputs submission is refused (a contract code and message), or undefined when it
 * answers exactly the pending calls of a request of the submitting project that waits for them. */
export function toolOutputsRefusal(
  state: AgentStop,
  waiting: boolean,
  submission: ToolOutputsSubmission,
): { type: 'context_expired' | 'invalid_tool_outputs'; message: string } | undefined {
  if (submission.projectId !== state.projectId || state.status !== 'requires_tool_outputs' || !waiting) {
    return { type: 'context_expired', message: 'The request is not waiting for tool outputs.' };
  }
  const pending = new Set((state.toolCalls ?? []).map((c) => c.id));
  const given = submission.outputs.map((o) => o.toolCallId);
  const unknown = given.filter((id) => !pending.has(id));
  const missing = [...pending].filter((id) => !given.includes(id));
  const duplicated = given.filter((id, i) => given.indexOf(id) !== i);
  if (!unknown.length && !missing.length && !duplicated.length) return undefined;
  const parts = [
    unknown.length ? `unknown tool_call_id: ${unknown.join(', ')}` : '',
    missing.length ? `missing outputs for: ${missing.join(', ')}` : '',
    duplicated.length ? `duplicated tool_call_id: ${[...new Set(duplicated)].join(', ')}` : '',
  ].filter(Boolean);
  return {
    type: 'invalid_tool_outputs',
    message: `tool_outputs must answer exactly the pending tool calls (${parts.join('; ')}).`,
  };
}

/** A failed model call or tool step in contract terms. */
export function toAgentError(e: unknown): AgentError {
  const cause = e instanceof ActivityFailure ? e.cause : e;
  if (cause instanceof ApplicationFailure) {
    if (cause.type === 'compute_error' || cause.type === 'service_unavailable') {
      return { code: cause.type, message: cause.message };
    }
    return { code: 'compute_unavailable', message: `The language model could not be reached: ${cause.message}` };
  }
  return { code: 'compute_unavailable', message: 'The language model could not be reached.' };
}
