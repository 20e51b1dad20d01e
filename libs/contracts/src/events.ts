import type { AgentStatus } from './agent.js';
import type { Capability, PlanName } from './capabilities.js';

/** Stored and published domain event types: explicit, versioned strings. */
export const EVENT_TYPES = {
  agentRequestAccepted: 'agent-request.accepted.v1',
  agentRequestToolCallsRequested: 'agent-request.tool-calls-requested.v1',
  agentRequestToolOutputsSubmitted: 'agent-request.tool-outputs-submitted.v1',
  agentRequestCompleted: 'agent-request.completed.v1',
  agentRequestFailed: 'agent-request.failed.v1',
  agentRequestExpired: 'agent-request.expired.v1',
  sessionStarted: 'session.started.v1',
  sessionMessageAppended: 'session.message-appended.v1',
  sessionExpired: 'session.expired.v1',
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

/** Data of the agent-request events that end a leg (a stop). */
export interface AgentRequestStopData {
  readonly requestId: string;
  readonly sessionId?: string;
  readonly status: AgentStatus;
  readonly stop: number;
  readonly capabilitiesUsed: readonly Capability[];
  readonly creditsCharged: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly errorCode?: string;
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
