import type { AgentError, AgentStatus, FileRef, ToolCall } from './agent.js';
import type { Capability, PlanName } from './capabilities.js';

/** Stored and published domain event types: explicit, versioned strings. */
export const EVENT_TYPES = {
  agentRequestAccepted: 'agent-request.accepted.v1',
  agentRequestToolCallsRequested: 'agent-request.tool-calls-requested.v1',
  agentRequestToolOutputsSubmitted: 'agent-request.tool-outputs-submitted.v1',
  agentRequestCompleted: 'agent-request.completed.v1',
  agentRequestFailed: 'agent-request.failed.v1',
  agentRequestExpired: 'agent-request.expired.v1',
  /** Cancelled with POST /v1/agent/{id}/cancel while running or paused. */
  agentRequestCancelled: 'agent-request.cancelled.v1',
  /** The api created the session and took one of the project's active-session slots. */
  sessionCreated: 'session.created.v1',
  /** The session accepted a message (its request id); the idle timer restarts. */
  sessionMessageAccepted: 'session.message-accepted.v1',
  /** The message's request paused for the caller's tool outputs. */
  sessionMessagePaused: 'session.message-paused.v1',
  /** The session answered a message (or gave up on it) and waits for the next one. */
  sessionMessageAnswered: 'session.message-answered.v1',
  /** The idle timeout ran out; the slot is free. */
  sessionExpired: 'session.expired.v1',
  /** Ended by DELETE /v1/sessions/{id}; the slot is free. */
  sessionEnded: 'session.ended.v1',
  projectCreditsCharged: 'project.credits-charged.v1',
  projectCreditsAdded: 'project.credits-added.v1',
  projectPlanChanged: 'project.plan-changed.v1',
  /** The reconciler released a reservation whose workflow closed without settling it. */
  ledgerReconciled: 'ledger.reconciled.v1',
  /** The reconciler freed the slot of a session whose workflow closed without recording its end. */
  sessionReconciled: 'session.reconciled.v1',
} as const;

export type EventType = (typeof EVENT_TYPES)[keyof typeof EVENT_TYPES];

/** The CloudEvents `type` of a usage event on mas.usage.v1. */
export const USAGE_EVENT_TYPE = 'mas.usage.recorded.v1';

/** Envelope metadata stored with every event. */
export interface EventMetadata {
  readonly projectId: string;
  /** The request (or session) the event belongs to. */
  readonly correlationId: string;
  /** The event or command that caused this one. */
  readonly causationId: string;
}

/** An event as read back from the store. */
export interface StoredEvent<T = Record<string, unknown>> {
  readonly eventId: string;
  readonly streamId: string;
  readonly version: number;
  readonly type: EventType;
  readonly data: T;
  readonly metadata: EventMetadata;
  readonly recordedAt: string;
}

/** The stream of an agent request's events. */
export const agentRequestStreamId = (requestId: string): string => `agent-request-${requestId}`;
/** The stream of a session's events. */
export const sessionStreamId = (sessionId: string): string => `session-${sessionId}`;

/** Data of `agent-request.accepted.v1`: admitted, credits reserved. */
export interface AgentRequestAcceptedData {
  readonly requestId: string;
  readonly creditsReserved: number;
  /** The project's quota counter after this request. */
  readonly requestsUsed: number;
  /** The project's balance after the reservation. */
  readonly creditsRemaining?: number;
}

/** Data of the agent-request events that end a leg (a stop). Ids and figures only: the content of
 * the stop (message, tool calls, files) stays in PostgreSQL (`request_views`, by request and stop). */
export interface AgentRequestStopData {
  readonly requestId: string;
  readonly sessionId?: string;
  readonly status: AgentStatus;
  readonly stop: number;
  readonly capabilitiesUsed: readonly Capability[];
  /** Credits charged by this leg (the settlement at the first stop; 0 after). */
  readonly creditsCharged: number;
  /** The project's balance right after this stop. */
  readonly creditsRemaining?: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly errorCode?: string;
}

/** The content of a stop, kept in PostgreSQL (`request_views`) with the stop event, never on Kafka:
 * what GET /v1/agent/{id} shows besides the event's figures. */
export interface AgentRequestStopView {
  readonly message?: string;
  readonly toolCalls?: readonly ToolCall[];
  /** The generated files; when absent, those of the request in `generated_files`. */
  readonly files?: readonly FileRef[];
  readonly error?: AgentError;
  /** The quota counter the stop reports (set when admission refused the request). */
  readonly requestsUsed?: number;
}

/** Data of `agent-request.tool-outputs-submitted.v1`: the ids answered, never the outputs. */
export interface AgentRequestToolOutputsData {
  readonly requestId: string;
  readonly stop: number;
  readonly toolCallIds: readonly string[];
}

/** Data of `session.created.v1`. Times are ISO-8601. */
export interface SessionCreatedData {
  readonly sessionId: string;
  readonly createdAt: string;
  readonly expiresAt: string;
}

/** Data of `session.message-accepted.v1` and `session.message-paused.v1`. */
export interface SessionMessageData {
  readonly sessionId: string;
  readonly requestId: string;
}

/** Data of the session events written from the session workflow's view (answered, expired, ended,
 * reconciled): the whole state, so the stream folds to it whatever came before. */
export interface SessionStateData {
  readonly sessionId: string;
  readonly status: 'active' | 'expired' | 'ended';
  readonly createdAt: string;
  readonly lastActivityAt: string;
  readonly expiresAt: string;
  readonly messageCount: number;
  /** The workflow's write counter (absent for the reconciler's event). */
  readonly revision?: number;
}

/** The payload (`data`) of a usage event on mas.usage.v1 - the billing contract; see docs/events/. */
export interface UsageEventData {
  readonly project_id: string;
  readonly request_id: string;
  readonly session_id: string | null;
  /** `initial` for the leg that was charged, `continuation` for legs after tool outputs. */
  readonly kind: 'initial' | 'continuation';
  readonly status: AgentStatus;
  readonly credits: number;
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly capabilities: readonly Capability[];
  readonly plan: PlanName;
  /** ISO-8601 start of the billing period the usage belongs to. */
  readonly billing_period_start: string;
  readonly occurred_at: string;
}
