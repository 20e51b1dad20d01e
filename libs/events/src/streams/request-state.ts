import {
  EVENT_TYPES,
  type AgentRequestAcceptedData,
  type AgentRequestStopData,
  type AgentStatus,
  type Capability,
} from '#libs/contracts';
import type { DomainEvent } from './domain-event.js';

/** An agent request as its events fold it (ids and figures; the content of a stop is in
 * `request_views`). The request-log read model stores exactly this. */
export interface RequestState {
  readonly requestId: string;
  readonly projectId: string;
  readonly sessionId: string | null;
  readonly status: AgentStatus;
  readonly stop: number;
  readonly capabilitiesUsed: readonly Capability[];
  /** Charged over the whole request, and by the leg that ended at the last stop. */
  readonly credits: number;
  readonly legCredits: number;
  readonly tokens: number;
  readonly legTokens: number;
  readonly creditsRemaining: number;
  readonly requestsUsed: number;
  readonly errorCode: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** The version of the last event folded in. */
  readonly version: number;
}

const STOPS = new Set<string>([
  EVENT_TYPES.agentRequestToolCallsRequested,
  EVENT_TYPES.agentRequestCompleted,
  EVENT_TYPES.agentRequestFailed,
  EVENT_TYPES.agentRequestExpired,
  EVENT_TYPES.agentRequestCancelled,
]);

/** Whether the event belongs to an agent request's stream. */
export const isRequestEvent = (type: string): boolean =>
  STOPS.has(type) || type === EVENT_TYPES.agentRequestAccepted || type === EVENT_TYPES.agentRequestToolOutputsSubmitted;

function initial(event: DomainEvent, requestId: string): RequestState {
  return {
    requestId,
    projectId: event.projectId,
    sessionId: null,
    status: 'in_progress',
    stop: 0,
    capabilitiesUsed: [],
    credits: 0,
    legCredits: 0,
    tokens: 0,
    legTokens: 0,
    creditsRemaining: 0,
    requestsUsed: 0,
    errorCode: null,
    createdAt: event.time,
    updatedAt: event.time,
    version: 0,
  };
}

/** Folds one event into the request (pure). An event at or below the state's version changes
 * nothing, so a redelivery or a catch-up that overlaps is harmless. */
export function evolveRequest(state: RequestState | undefined, event: DomainEvent): RequestState | undefined {
  if (!isRequestEvent(event.type)) return state;
  if (state && event.version <= state.version) return state;
  const requestId = String(event.data.requestId);
  const s = state ?? initial(event, requestId);
  const moved = { ...s, version: event.version, updatedAt: event.time };
  if (event.type === EVENT_TYPES.agentRequestAccepted) {
    const d = event.data as unknown as AgentRequestAcceptedData & { creditsRemaining?: number };
    return { ...moved, requestsUsed: d.requestsUsed, creditsRemaining: d.creditsRemaining ?? s.creditsRemaining };
  }
  if (event.type === EVENT_TYPES.agentRequestToolOutputsSubmitted) return { ...moved, status: 'in_progress' };
  const d = event.data as unknown as AgentRequestStopData;
  const legTokens = d.inputTokens + d.outputTokens;
  return {
    ...moved,
    sessionId: d.sessionId ?? s.sessionId,
    status: d.status,
    stop: d.stop,
    capabilitiesUsed: d.capabilitiesUsed,
    credits: s.credits + d.creditsCharged,
    legCredits: d.creditsCharged,
    tokens: s.tokens + legTokens,
    legTokens,
    creditsRemaining: d.creditsRemaining ?? s.creditsRemaining,
    errorCode: d.errorCode ?? null,
  };
}

/** A row of the request-log read model (apps/projector), as PostgreSQL returns it. */
export interface RequestRow {
  request_id: string;
  project_id: string;
  session_id: string | null;
  status: AgentStatus;
  stop: number;
  capabilities: Capability[];
  credits: number;
  leg_credits: number;
  tokens: string;
  leg_tokens: string;
  credits_remaining: number;
  requests_used: number;
  error_code: string | null;
  created_at: Date;
  updated_at: Date;
  version: number;
}

/** The request state a read-model row holds (the projector writes it, the api reads it). */
export const requestStateFromRow = (r: RequestRow): RequestState => ({
  requestId: r.request_id,
  projectId: r.project_id,
  sessionId: r.session_id,
  status: r.status,
  stop: r.stop,
  capabilitiesUsed: r.capabilities,
  credits: r.credits,
  legCredits: r.leg_credits,
  tokens: Number(r.tokens),
  legTokens: Number(r.leg_tokens),
  creditsRemaining: r.credits_remaining,
  requestsUsed: r.requests_used,
  errorCode: r.error_code,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
  version: r.version,
});
