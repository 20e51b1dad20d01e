import {
  FINAL_STATUSES,
  initialStop,
  SESSION_LIMITS,
  type AgentRequestInput,
  type AgentStop,
  type ConversationActivities,
  type ConversationSlice,
  type ErrorCode,
  type SessionMessage,
  type SessionStatus,
  type SessionView,
  type SessionWorkflowInput,
} from '#libs/contracts';
import { failedStop } from './agent-loop.js';

// The decisions of a session, pure: what it shows, which messages and ends it refuses, which
// message runs next with which slice of the conversation, what an answer changes and when the
// session expires or hands over to a new run. The workflow (session.workflow.ts) orders the
// steps and their durable waits; activities do the I/O. No Temporal API and no I/O here: times
// are the workflow's clock, passed in.

/** Continue as new after this many history events (well below Temporal's limits; a message costs
 * about twenty), unless the input says otherwise or the server suggests it earlier. */
export const CONTINUE_AS_NEW_AFTER_EVENTS = 2000;
/** ... or after this many bytes of history: a message adds its answer twice (the child's result and
 * the Update's), so a run hands over early enough to stay well under 1 MB (DESIGN.md section 9). */
export const CONTINUE_AS_NEW_AFTER_BYTES = 256 * 1024;

/** A finished exchange, as the conversation store appends it. */
export type ExchangeInput = Parameters<ConversationActivities['appendExchange']>[0];

/** A refusal in the contract's terms: the failure type is its error code. */
export interface SessionRefusal {
  readonly type: ErrorCode;
  readonly message: string;
}

/** A message waiting for (or being given) its answer. */
export interface Pending {
  readonly message: SessionMessage;
  reply?: { readonly stop: AgentStop } | { readonly error: SessionRefusal };
  /** Its request told the session it reached its last stop (completed, failed, expired or
   * cancelled): the session takes the next message, which waits only for this exchange to be
   * folded into the conversation. */
  requestEnded?: boolean;
}

/** What the workflow's history says about its size (workflowInfo()). */
export interface HistoryInfo {
  readonly continueAsNewSuggested: boolean;
  readonly historyLength: number;
  readonly historySize: number;
}

/** A message's run: the child request's input and the slice of the conversation it is given. */
export interface MessageRun {
  readonly request: Omit<SessionMessage, 'acceptBy'>;
  readonly history: ConversationSlice;
  readonly childInput: AgentRequestInput;
}

/** One session's state, changed only through its methods. */
export class SessionLoop {
  status: SessionStatus = 'active';
  /** The length of the session's conversation (user and assistant messages count one each). */
  messageCount: number;
  /** The idle timer runs on the workflow's clock, from the moment the session started. */
  lastActivityAt: number;
  revision: number;
  endedAt = 0;
  /** A message accepted and not started yet: at most one, taken while the previous exchange is
   * being folded into the conversation once its request has ended. */
  readonly queue: Pending[] = [];
  current: Pending | undefined;

  constructor(
    private readonly input: SessionWorkflowInput,
    now: number,
  ) {
    this.messageCount = input.carried?.messageCount ?? 0;
    this.lastActivityAt = input.carried?.lastActivityAt ?? now;
    this.revision = input.carried?.revision ?? 0;
  }

  /** The session as the `state` query shows it and the read model stores it. */
  view(): SessionView {
    const { input, status, current } = this;
    return {
      sessionId: input.sessionId,
      projectId: input.projectId,
      status,
      createdAt: input.createdAt,
      lastActivityAt: this.lastActivityAt,
      expiresAt: status === 'ended' ? this.endedAt : this.lastActivityAt + input.idleTimeoutMs,
      messageCount: this.messageCount,
      revision: this.revision,
      ...(current ? { activeRequestId: current.message.requestId } : {}),
      queuedMessages: this.queue.length,
    };
  }

  /** The next version of the read-model row. */
  nextRecord(): SessionView {
    this.revision += 1;
    return this.view();
  }

  /** The contract's refusal of a message or an end for this session, if any. */
  refusal(projectId: string): SessionRefusal | undefined {
    // Another project's session does not exist for the caller.
    if (projectId !== this.input.projectId)
      return { type: 'session_not_found', message: 'No session with this id exists in this project.' };
    if (this.status === 'expired')
      return {
        type: 'session_expired',
        message: 'The session expired after a period without messages. Start a new session.',
      };
    if (this.status === 'ended')
      return { type: 'session_ended', message: 'The session was ended. Start a new session.' };
    return undefined;
  }

  /** Why a message may not be accepted now, if it may not. Refusals record nothing. */
  messageRefusal(message: SessionMessage, now: number): SessionRefusal | undefined {
    const refused = this.refusal(message.projectId);
    if (refused) return refused;
    // The api stopped waiting and told its caller so: the message must not run behind its back.
    if (now > message.acceptBy)
      return { type: 'compute_unavailable', message: 'The session did not take the message up in time.' };
    const busy = this.busyWith();
    if (!busy) return undefined;
    return {
      type: 'session_busy',
      message: `The session's previous message (request ${busy.message.requestId}) is still running or waiting for tool outputs: submit its tool outputs, cancel it or wait for its answer, then send this message again. Nothing was recorded.`,
    };
  }

  /** The message that keeps the session busy, if any: one accepted and not started yet, or the one
   * being answered until its request ends (running, or paused for tool outputs). */
  busyWith(): Pending | undefined {
    return this.queue.at(-1) ?? (this.current && !this.current.requestEnded ? this.current : undefined);
  }

  /** Accepts a message; it resets the idle timer (contract section 3.2). */
  accept(message: SessionMessage, now: number): Pending {
    const entry: Pending = { message };
    this.queue.push(entry);
    this.lastActivityAt = now;
    return entry;
  }

  /** The accepted message to answer next, taken from the queue. */
  next(): Pending | undefined {
    return this.queue.shift();
  }

  /** Ends the session: a message accepted and not started is answered with session_ended. */
  end(now: number): void {
    this.endedAt = now;
    this.status = 'ended';
    for (const waiting of this.queue.splice(0)) {
      waiting.reply = {
        error: { type: 'session_ended', message: 'The session was ended before this message was answered.' },
      };
    }
  }

  /** The idle timer ran out with nothing to answer. */
  expire(): void {
    this.status = 'expired';
  }

  /** The current message's request told a stop. */
  requestStopped(stop: AgentStop, now: number): void {
    const current = this.current;
    if (current?.message.requestId !== stop.requestId) return;
    this.lastActivityAt = now;
    // The request told its last stop before anyone could see it (a tool-outputs or cancel answer,
    // a stream's end): the session is free for the next message from here. Its own caller still
    // hears a stop that did not pause from answered(), once the exchange is in the conversation.
    if (FINAL_STATUSES.has(stop.status)) {
      current.requestEnded = true;
      return;
    }
    // A pause answers the message; the caller resumes the paused request directly.
    current.reply ??= { stop };
  }

  /** Starts answering `entry`: the child request's input, with the last messages of the
   * conversation (at most 50 reach the model, the new user message included). With
   * `windowStartsWithUser` (patch 'session-window-starts-with-user') the window opens at a user
   * message, as Anthropic requires: 48 earlier messages and the new one once the session is long.
   * Without it (histories recorded before the patch) it may open at an assistant message. */
  begin(entry: Pending, { windowStartsWithUser = false }: { windowStartsWithUser?: boolean } = {}): MessageRun {
    this.current = entry;
    const { acceptBy: _acceptBy, ...request } = entry.message;
    // The conversation is whole exchanges, user then assistant: even positions are user messages.
    let from = Math.max(0, this.messageCount - (SESSION_LIMITS.historyMessages - 1));
    if (windowStartsWithUser) from += from % 2;
    const history: ConversationSlice = { id: this.input.sessionId, from, to: this.messageCount };
    return { request, history, childInput: { ...request, history, sessionId: this.input.sessionId } };
  }

  /** The stop of a message whose request could not be run. */
  failedToRun(run: MessageRun): AgentStop {
    return failedStop(initialStop({ ...run.request, sessionId: this.input.sessionId }), {
      code: 'compute_error',
      message: 'The agent run failed.',
    });
  }

  /** The exchange to fold into the conversation: only a finished one enters it (a failed or
   * expired request leaves no trace). */
  exchangeOf(run: MessageRun, final: AgentStop): ExchangeInput | undefined {
    if (final.status !== 'completed') return undefined;
    const { history } = run;
    return {
      projectId: this.input.projectId,
      sessionId: this.input.sessionId,
      at: this.messageCount,
      requestId: run.request.requestId,
      userSeq: history.to - history.from,
      keep: SESSION_LIMITS.historyMessages,
    };
  }

  /** The message's request ran (and its exchange, if any, is in the conversation). */
  answered(appended: boolean, now: number): void {
    if (appended) this.messageCount += 2;
    this.lastActivityAt = now;
    this.current = undefined;
  }

  /** Whether the run's history is long enough to hand over to a new run. */
  continueAsNewDue(info: HistoryInfo): boolean {
    return (
      info.continueAsNewSuggested ||
      info.historyLength >= (this.input.continueAsNewAfterEvents ?? CONTINUE_AS_NEW_AFTER_EVENTS) ||
      info.historySize >= (this.input.continueAsNewAfterBytes ?? CONTINUE_AS_NEW_AFTER_BYTES)
    );
  }

  /** Whether a wait of the main loop is over: a message to answer, or the session no longer active. */
  hasWork(): boolean {
    return this.queue.length > 0 || this.status !== 'active';
  }

  /** Active with nothing to answer: what expires, or what hands over to a new run. */
  idle(): boolean {
    return this.queue.length === 0 && this.status === 'active';
  }

  /** How long until the idle timer runs out (0 or less: it has). */
  idleLeft(now: number): number {
    return this.lastActivityAt + this.input.idleTimeoutMs - now;
  }

  /** The input of the next run, when this one continues as new. */
  carriedInput(): SessionWorkflowInput {
    return {
      ...this.input,
      carried: { messageCount: this.messageCount, lastActivityAt: this.lastActivityAt, revision: this.revision },
    };
  }
}
