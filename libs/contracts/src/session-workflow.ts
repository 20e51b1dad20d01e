import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { AgentRequestInput, AgentStop } from './agent-workflow.js';

/** Limits of contract section 8 that apply to sessions. */
export const SESSION_LIMITS = {
  /** Active sessions per project. */
  activePerProject: 10,
  /** Messages that reach the model, the new user message included (user and assistant count one each). */
  historyMessages: 50,
  /** Idle time after which a session expires (the default; SESSION_IDLE_TIMEOUT_MS overrides it). */
  idleTimeoutMs: 30 * 60 * 1000,
} as const;

/** `active` on creation; `expired` after the idle timeout; `ended` by DELETE (DESIGN.md section 7). */
export type SessionStatus = 'active' | 'expired' | 'ended';

export const SESSION_STATUSES: readonly SessionStatus[] = ['active', 'expired', 'ended'];

export const sessionWorkflowId = (sessionId: string): string => `session-${sessionId}`;

/** What a run of sessionWorkflow hands to the next one when it continues as new. The conversation
 * itself stays in the conversation store under the session's id. */
export interface SessionCarryOver {
  /** Messages in the session's conversation so far (its length; user and assistant count one each). */
  readonly messageCount: number;
  readonly lastActivityAt: number;
  /** Version of the read-model row, so an older write never overwrites a newer one. */
  readonly revision: number;
}

/** Input of sessionWorkflow. Times are unix milliseconds. Nothing secret. */
export interface SessionWorkflowInput {
  readonly sessionId: string;
  readonly projectId: string;
  readonly createdAt: number;
  /** 30 minutes unless the operator configured another idle timeout. */
  readonly idleTimeoutMs: number;
  /** Continue as new once the run's history has this many events (or when the server suggests it). */
  readonly continueAsNewAfterEvents?: number;
  /** Continue as new once the run's history has this many bytes. */
  readonly continueAsNewAfterBytes?: number;
  /** Set by continue-as-new only. */
  readonly carried?: SessionCarryOver;
}

/** A message for a session: the agent request the api prepared, without the history (the session
 * adds it). `acceptBy` (unix ms): after it the api has given up waiting, so the message is refused. */
export type SessionMessage = Omit<AgentRequestInput, 'history' | 'sessionId'> & { readonly acceptBy: number };

/** The session as the `state` query shows it and the read model stores it. Times are unix ms. */
export interface SessionView {
  readonly sessionId: string;
  readonly projectId: string;
  readonly status: SessionStatus;
  readonly createdAt: number;
  readonly lastActivityAt: number;
  /** When the idle timer runs out (it does not run while a message is being answered or awaits
   * tool outputs); for an ended session, when it was ended. */
  readonly expiresAt: number;
  /** User and assistant messages in the conversation so far (each counts one). */
  readonly messageCount: number;
  readonly revision: number;
  /** The request being answered now, if any, and the messages accepted and not started yet (0 or 1:
   * the one accepted while the previous exchange is being folded into the conversation). */
  readonly activeRequestId?: string;
  readonly queuedMessages: number;
}

/** Sends a message; the validator refuses an ended, expired or foreign session, and a session busy
 * with its previous message (`session_busy`) (contract codes as the failure type); the reply is the
 * first stop of the message's request. */
export const sendSessionMessageUpdate = defineUpdate<AgentStop, [SessionMessage]>('sendMessage');
/** Ends the session (DELETE /v1/sessions/{id}); the reply is the ended session. */
export const endSessionUpdate = defineUpdate<SessionView, [{ readonly projectId: string }]>('endSession');
/** The session's current state, for operators in the Temporal UI. */
export const sessionStateQuery = defineQuery<SessionView>('state');
/** A session's request tells its session that it paused for tool outputs, and that it ended (before
 * its end shows anywhere, so the session is not busy for a caller who saw it). */
export const sessionRequestStopSignal = defineSignal<[AgentStop]>('sessionRequestStop');

/** Activities of sessionWorkflow; the workflow imports only this interface. */
export interface SessionActivities {
  /** Writes the session's read-model row; a write older than the stored revision changes nothing. */
  recordSession(view: SessionView): Promise<void>;
}
