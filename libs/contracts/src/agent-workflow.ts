import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type {
  AgentError,
  AgentStatus,
  ChatMessage,
  FileRef,
  InputFileRef,
  StreamEvent,
  ToolCall,
  ToolDefinition,
  ToolSpec,
} from './agent.js';
import type { Capability, PlanName } from './capabilities.js';
import type { AgentRequestStopView } from './events.js';

/** Operators find requests in the Temporal UI by these (registered by the stack). */
export const SEARCH_ATTRIBUTES = {
  projectId: defineSearchAttributeKey('ProjectId', SearchAttributeType.KEYWORD),
  agentStatus: defineSearchAttributeKey('AgentStatus', SearchAttributeType.KEYWORD),
  capabilities: defineSearchAttributeKey('Capabilities', SearchAttributeType.KEYWORD_LIST),
};

export const agentRequestWorkflowId = (requestId: string): string => `agent-request-${requestId}`;

/** How an agent request's workflow is started, by the api and by a session (as its child). */
export interface AgentRequestStartOptions {
  readonly workflowId: string;
  /** A request id runs once: a closed run's id is never used for a second run. */
  readonly workflowIdReusePolicy: 'REJECT_DUPLICATE';
  readonly workflowExecutionTimeout: '24 hours';
  readonly typedSearchAttributes: SearchAttributePair[];
}

/** The start options every agent request's workflow shares, whoever starts it. */
export function agentRequestStartOptions(input: {
  readonly requestId: string;
  readonly projectId: string;
  readonly capabilities: readonly Capability[];
}): AgentRequestStartOptions {
  return {
    workflowId: agentRequestWorkflowId(input.requestId),
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    workflowExecutionTimeout: '24 hours',
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.projectId, value: input.projectId },
      { key: SEARCH_ATTRIBUTES.agentStatus, value: 'in_progress' },
      { key: SEARCH_ATTRIBUTES.capabilities, value: [...input.capabilities] },
    ],
  };
}

/** A text inline, or stored in the blob store (claim check) when it is long. */
export type TextRef = { readonly text: string } | { readonly blobId: string };

/** A conversation in the conversation store as a workflow carries it: its id (the request's or the
 * session's) and how many messages it has. The messages themselves never enter workflow history. */
export interface ConversationRef {
  readonly id: string;
  readonly length: number;
}

/** The messages [from, to) of a stored conversation: a session's history for its next request. */
export interface ConversationSlice {
  readonly id: string;
  readonly from: number;
  readonly to: number;
}

/** A tool offered in a conversation: the caller's own (`custom`: the request pauses for it) or built in. */
export interface OfferedTool extends ToolSpec {
  readonly custom: boolean;
}

/** A tool call as a model step reports it: the arguments of built-in calls stay in the store. */
export interface ToolCallRef {
  readonly id: string;
  readonly name: string;
  /** Present for the caller's own tools (the caller receives them). */
  readonly arguments?: Record<string, unknown>;
}

/** What one model call produced, by reference: the assistant message is stored at the conversation's
 * next seq; the workflow gets the reply text only when the model called no tools. */
export interface ModelStep {
  readonly reply?: string;
  readonly toolCalls: readonly ToolCallRef[];
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number };
  /** Stream events the call published (token events), when it streamed. */
  readonly streamed?: number;
}

/** Input of agentRequestWorkflow. Nothing secret: the model key is read inside the activity. */
export interface AgentRequestInput {
  readonly requestId: string;
  readonly projectId: string;
  readonly plan: PlanName;
  /** The user's message; a long one is stored by the api and travels by reference. */
  readonly message: TextRef;
  /** Earlier turns (sessions): a slice of the session's conversation; absent for a one-shot request. */
  readonly history?: ConversationSlice;
  /** Capabilities whose built-in tools are offered (only `chat` when custom tools are present). */
  readonly capabilities: readonly Capability[];
  /** Whether the caller named the capabilities: then it is told about any it cannot have (e.g. web_search without a provider). */
  readonly capabilitiesRequested: boolean;
  readonly tools: readonly ToolDefinition[];
  readonly files: readonly InputFileRef[];
  /** Credits reserved before the run: 1 + the surcharges of the capabilities offered. */
  readonly maxCredits: number;
  readonly surcharges: Readonly<Record<Capability, number>>;
  readonly monthlyQuota: number;
  readonly stream: boolean;
  /** How long a pause waits for tool outputs (the contract's 5 minutes unless configured). */
  readonly toolOutputsTimeoutMs?: number;
  /** Set when the request is a session's message (it then tells the session about its pauses). */
  readonly sessionId?: string;
  /** Unix ms after which the api has stopped waiting for a worker to take the request up and told
   * its caller compute_unavailable: a run that first starts later fails at once, before admission,
   * so nothing is reserved or run behind the caller's back. Absent for session messages (the
   * session checks its own). */
  readonly acceptBy?: number;
  /** True when the api admitted the request before starting its workflow (DESIGN.md section 10):
   * its quota count and credit reservation exist, with a pickup deadline, and the workflow only
   * takes it up (beginRequest's `admitted`). Absent for a request of a previous release: the
   * workflow admits it. */
  readonly admitted?: boolean;
  /** The task queue of the run's long activities (a streamed or background run's model calls, its
   * built-in tools) when the operator runs them on workers of their own (the bulkhead,
   * TEMPORAL_LONG_ACTIVITY_TASK_QUEUE); absent: the workflow's own task queue. */
  readonly longActivityTaskQueue?: string;
}

/** Temporal's workflow task timeout (the SDK's default, which the service does not change): how
 * long a task started by a worker that died is held before another worker gets it. */
export const WORKFLOW_TASK_TIMEOUT_MS = 10_000;

/** One stop of a request as the api renders it (and the `state` query shows operators). */
export interface AgentStop {
  readonly requestId: string;
  readonly projectId: string;
  readonly status: AgentStatus;
  /** Bumped at every stop, so a caller can wait for the next one. */
  readonly stop: number;
  readonly message?: string;
  readonly toolCalls?: readonly ToolCall[];
  readonly capabilitiesUsed: readonly Capability[];
  readonly files: readonly FileRef[];
  /** Tokens of the leg that ended at this stop (this HTTP request). */
  readonly tokensUsed: number;
  /** Credits charged by the leg that ended at this stop: the charge at the first stop, 0 after. */
  readonly creditsThisRequest: number;
  /** The project's balance after this stop's charge. */
  readonly creditsRemaining: number;
  /** Quota counter after this request was admitted. */
  readonly requestsUsed: number;
  readonly error?: AgentError;
  /** The session the request belongs to: its responses are `session.message`s. */
  readonly sessionId?: string;
}

/** Outputs for pending tool calls; a large output arrives as a stored blob's id (claim check). */
export interface ToolOutputsSubmission {
  /** The submitting project: another project's submission is refused as context_expired. */
  readonly projectId: string;
  readonly outputs: readonly { readonly toolCallId: string; readonly output?: string; readonly blobId?: string }[];
}

/** Waits for the request's first stop (Update-with-Start): completed, paused, or failed. */
export const firstStopUpdate = defineUpdate<AgentStop>('firstStop');
/** Delivers tool outputs; the validator refuses a request that is not paused or ids that are not
 * exactly the pending calls; the reply is the next stop. */
export const submitToolOutputsUpdate = defineUpdate<AgentStop, [ToolOutputsSubmission]>('submitToolOutputs');
/** The request's current state, for the api's GET and the Temporal UI. */
export const stateQuery = defineQuery<AgentStop>('state');

/** One stop of a request as the metering records it. */
export interface StopRecord {
  readonly requestId: string;
  readonly projectId: string;
  readonly sessionId?: string;
  readonly plan: PlanName;
  readonly stop: number;
  readonly status: Exclude<AgentStatus, 'in_progress'>;
  readonly capabilitiesUsed: readonly Capability[];
  /** The surcharges the reservation was priced with (the charge uses the same). */
  readonly surcharges: Readonly<Record<Capability, number>>;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly errorCode?: string;
  /** The stop's content (message, tool calls, files, error), stored with its event for reads. */
  readonly view?: AgentRequestStopView;
}

/** What recording a stop answers: the charge, and, when the stop had been recorded already (a
 * re-run of the step), the stop as it was first recorded. */
export interface StopRecorded {
  readonly creditsThisRequest: number;
  readonly creditsRemaining: number;
  readonly recorded?: FirstRecordedStop;
}

/** A stop as first recorded: what a re-run of the step adopts in place of its own outcome. */
export interface FirstRecordedStop {
  readonly status: Exclude<AgentStatus, 'in_progress'>;
  readonly capabilitiesUsed: readonly Capability[];
  readonly tokensUsed: number;
  readonly view: AgentRequestStopView;
}

/** A built-in tool as offered: its spec and the capability it belongs to. */
export type BuiltinTool = ToolSpec & { readonly capability: Capability };

/** The tools a request's model is offered, the caller's own first, as stored with its conversation. */
export function offeredTools(custom: readonly ToolDefinition[], builtin: readonly BuiltinTool[]): OfferedTool[] {
  const spec = ({ name, description, parameters }: ToolSpec, isCustom: boolean): OfferedTool => ({
    name,
    description,
    parameters,
    custom: isCustom,
  });
  return [...custom.map((t) => spec(t, true)), ...builtin.map((t) => spec(t, false))];
}

/** What a request begins with: its admission, and (when admitted) its tools and conversation. */
export type BeginRequestResult =
  | {
      ok: true;
      balance: number;
      requestsUsed: number;
      builtin: readonly BuiltinTool[];
      notes: readonly string[];
      length: number;
    }
  | { ok: false; error: AgentError; balance: number; requestsUsed: number };

/** Activities of the agent loop; the workflow imports only this interface. */
export interface AgentActivities extends ConversationActivities {
  /** A request's first step, one local activity: admits it (counts it against the monthly quota and
   * reserves `credits`, in one transaction), then, when admitted, computes the built-in tools of its
   * capabilities and opens its conversation (the tools offered, the session's history copied from
   * `history`, the user message). Idempotent by request id. */
  beginRequest(input: {
    requestId: string;
    projectId: string;
    credits: number;
    monthlyQuota: number;
    capabilities: readonly Capability[];
    customTools: readonly ToolDefinition[];
    history?: ConversationSlice;
    message: TextRef;
    /** The api's pickup deadline (AgentRequestInput.acceptBy): a request not admitted by then is
     * refused (compute_unavailable) without a reservation; one admitted already goes on. */
    acceptBy?: number;
    /** The api admitted the request: take it up (its reservation's pickup deadline decides)
     * instead of admitting it. */
    admitted?: boolean;
  }): Promise<BeginRequestResult>;
  /** Releases the reservation of a request that is ending without a settled stop (the workflow's
   * clean-up after an unexpected failure). Idempotent: a settled request is left as it is. */
  releaseReservation(input: { requestId: string; projectId: string }): Promise<void>;
  /** Calls the project's model (its key is decrypted here, never passed in) with the first
   * `conversation.length` messages of the stored conversation and its tools, and stores the
   * assistant message at seq `conversation.length` with its figures. A call already answered for
   * that seq (a re-run of the step: an activity retry after the answer was stored, or a workflow
   * task retried after its local activities ran) is read back from the store, not made again. */
  callModel(input: {
    requestId: string;
    projectId: string;
    conversation: ConversationRef;
    files: readonly InputFileRef[];
    stream: boolean;
    /** The seq of the first token event this call publishes, when streaming. */
    streamSeq?: number;
  }): Promise<ModelStep>;
  /** Publishes stream events (tool_start, tool_end, done, error) for live delivery and replay,
   * numbered from `fromSeq` (the workflow's next seq, which a model call's `streamed` keeps past
   * every token it wrote), so a re-run of the step writes the same events at the same seqs, which
   * the store keeps once; without `fromSeq` (runs started before it existed), numbered after the
   * last stored event. Returns the next free seq. */
  emitStreamEvents(input: {
    requestId: string;
    projectId: string;
    events: readonly Omit<StreamEvent, 'seq'>[];
    fromSeq?: number;
  }): Promise<{ nextSeq: number }>;
  /** The text of the token events stored from `fromSeq` on: what a model call cut short by a
   * cancellation had streamed, which the cancelled stop keeps as its partial message. */
  streamedText(input: { requestId: string; projectId: string; fromSeq: number }): Promise<string>;
  /** Records a stop: in one transaction, the stop event, the settlement of the reservation at the
   * first stop (to 1 + the surcharges of the capabilities used, or 0 for a failed run) and the usage
   * event on mas.usage.v1 carrying the settled amount and the leg's tokens. A stop is recorded once
   * (request id and stop number), whatever the outcome a re-run of the step brings: a second call
   * records nothing and answers the stop as first recorded (`recorded`), which the workflow adopts. */
  recordStop(input: StopRecord): Promise<StopRecorded>;
  /** Records that tool outputs arrived for a paused request. Idempotent by request id and stop. */
  recordToolOutputs(input: {
    requestId: string;
    projectId: string;
    stop: number;
    toolCallIds: readonly string[];
  }): Promise<void>;
  /** Runs one built-in tool call by reference: its arguments are read from the assistant message at
   * seq `callSeq`, its output is stored as the tool message at seq `at`. */
  runBuiltinTool(input: {
    requestId: string;
    projectId: string;
    conversationId: string;
    callSeq: number;
    callId: string;
    at: number;
    files: readonly InputFileRef[];
  }): Promise<{
    ok: boolean;
    files: readonly FileRef[];
  }>;
}

/** Activities that write conversations (agent requests and sessions); ids are request or session ids. */
export interface ConversationActivities {
  /** Stores messages at seq `at` onwards (a tool message whose content is a blob marker is stored
   * with the blob's text). Idempotent. */
  appendMessages(input: {
    projectId: string;
    conversationId: string;
    at: number;
    messages: readonly ChatMessage[];
  }): Promise<void>;
  /** Appends a finished exchange of a session's request (its user message at `userSeq` and its
   * final reply) to the session's conversation at `at`, keeping only the last `keep` messages. */
  appendExchange(input: {
    projectId: string;
    sessionId: string;
    at: number;
    requestId: string;
    userSeq: number;
    keep: number;
  }): Promise<void>;
}

/** A tool output stored by reference stands in the conversation as this marker; the model
 * activity replaces it with the stored text, so large outputs never enter workflow history. */
export const blobMarker = (blobId: string): string => `mas-blob://${blobId}`;
export const BLOB_MARKER = /^mas-blob:\/\/([0-9a-f-]{36})$/;

/** What one reconciler pass looked at and fixed. */
export interface ReconcilerReport {
  /** Open reservations examined, and those released because their workflow had closed. */
  readonly reservationsChecked: number;
  readonly reservationsReleased: number;
  readonly creditsReleased: number;
  /** Active sessions examined, and those freed because their workflow had closed. */
  readonly sessionsChecked: number;
  readonly sessionsFreed: number;
}

/** Activities of ledgerReconcilerWorkflow. */
export interface ReconcilerActivities {
  /** Reconciles what is older than `graceSeconds` (younger rows may belong to a step in flight). */
  reconcile(input: { graceSeconds: number }): Promise<ReconcilerReport>;
}

export const ledgerReconcilerScheduleId = (taskQueue: string): string => `ledger-reconciler-${taskQueue}`;

/** The stream event that ends a streamed request at this stop (`done` or `error`), if it ends it:
 * what the workflow publishes, and what a replay shows for a run whose own end event is not stored. */
export function endEvents(stop: AgentStop): Omit<StreamEvent, 'seq'>[] {
  if (stop.status === 'completed') {
    const usage = {
      credits_this_request: stop.creditsThisRequest,
      credits_remaining: stop.creditsRemaining,
      tokens_used: stop.tokensUsed,
    };
    return [{ type: 'done', data: { id: stop.requestId, status: stop.status, usage } }];
  }
  if (stop.status === 'cancelled') {
    return [{ type: 'error', data: { code: 'request_cancelled', message: 'The request was cancelled.' } }];
  }
  if (stop.status === 'failed' || stop.status === 'expired') {
    const error = stop.error ?? { code: 'context_expired', message: 'The request expired.' };
    return [{ type: 'error', data: { code: error.code, message: error.message } }];
  }
  return [];
}

/** A request before its first stop; the workflows and the api (a background run's first answer) build it here alone. */
export function initialStop(request: {
  readonly requestId: string;
  readonly projectId: string;
  readonly sessionId?: string;
}): AgentStop {
  return {
    requestId: request.requestId,
    projectId: request.projectId,
    status: 'in_progress',
    stop: 0,
    capabilitiesUsed: [],
    files: [],
    tokensUsed: 0,
    creditsThisRequest: 0,
    creditsRemaining: 0,
    requestsUsed: 0,
    ...(request.sessionId ? { sessionId: request.sessionId } : {}),
  };
}
