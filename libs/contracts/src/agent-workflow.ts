import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { AgentError, AgentStatus, ChatMessage, FileRef, InputFileRef, ModelTurn, StreamEvent, ToolCall, ToolDefinition, ToolSpec } from './agent.js';
import type { Capability, PlanName } from './capabilities.js';

/** Operators find requests in the Temporal UI by these (registered by the stack). */
export const SEARCH_ATTRIBUTES = {
  projectId: defineSearchAttributeKey('ProjectId', SearchAttributeType.KEYWORD),
  agentStatus: defineSearchAttributeKey('AgentStatus', SearchAttributeType.KEYWORD),
  capabilities: defineSearchAttributeKey('Capabilities', SearchAttributeType.KEYWORD_LIST),
};

export const agentRequestWorkflowId = (requestId: string): string => `agent-request-${requestId}`;

/** Input of agentRequestWorkflow. Nothing secret: the model key is read inside the activity. */
export interface AgentRequestInput {
  readonly requestId: string;
  readonly projectId: string;
  readonly plan: PlanName;
  readonly message: string;
  /** Earlier turns (sessions); empty for a one-shot request. */
  readonly history: readonly ChatMessage[];
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
}

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
}

/** Activities of the agent loop; the workflow imports only this interface. */
export interface AgentActivities {
  /** Admits the request: counts it against the monthly quota and reserves `credits`. Idempotent by request id. */
  admitRequest(input: { requestId: string; projectId: string; credits: number; monthlyQuota: number }): Promise<
    { ok: true; balance: number; requestsUsed: number } | { ok: false; error: AgentError; balance: number; requestsUsed: number }
  >;
  /** Releases the reservation of a request that is ending without a settled stop (the workflow's
   * clean-up after an unexpected failure). Idempotent: a settled request is left as it is. */
  releaseReservation(input: { requestId: string; projectId: string }): Promise<void>;
  /** Calls the project's model (its key is decrypted here, never passed in). */
  callModel(input: {
    requestId: string;
    projectId: string;
    messages: readonly ChatMessage[];
    tools: readonly ToolSpec[];
    files: readonly InputFileRef[];
    stream: boolean;
    /** The seq of the first token event this call publishes, when streaming. */
    streamSeq?: number;
  }): Promise<ModelTurn>;
  /** Publishes stream events (tool_start, tool_end, done, error) for live delivery and replay,
   * numbered after the last stored event (so they follow the tokens of a failed model call too);
   * returns the next free seq. */
  emitStreamEvents(input: { requestId: string; projectId: string; events: readonly Omit<StreamEvent, 'seq'>[] }): Promise<{ nextSeq: number }>;
  /** Records a stop: in one transaction, the stop event, the settlement of the reservation at the
   * first stop (to 1 + the surcharges of the capabilities used, or 0 for a failed run) and the usage
   * event on mas.usage.v1 carrying the settled amount and the leg's tokens. Idempotent by request id
   * and stop number: a retry answers what the first attempt did. */
  recordStop(input: StopRecord): Promise<{ creditsThisRequest: number; creditsRemaining: number }>;
  /** Records that tool outputs arrived for a paused request. Idempotent by request id and stop. */
  recordToolOutputs(input: { requestId: string; projectId: string; stop: number; toolCallIds: readonly string[] }): Promise<void>;
  /** Built-in tools offered for a set of capabilities, and notes on any that are unavailable. */
  builtinTools(input: { capabilities: readonly Capability[] }): Promise<{ tools: readonly (ToolSpec & { capability: Capability })[]; notes: readonly string[] }>;
  /** Runs one built-in tool call. */
  runBuiltinTool(input: { requestId: string; projectId: string; call: ToolCall; files: readonly InputFileRef[] }): Promise<{ ok: boolean; output: string; files: readonly FileRef[] }>;
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
