import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  log,
  proxyLocalActivities,
  setHandler,
  setWorkflowOptions,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  agentRequestWorkflowId,
  endSessionUpdate,
  FINAL_STATUSES,
  initialStop,
  SEARCH_ATTRIBUTES,
  sendSessionMessageUpdate,
  SESSION_LIMITS,
  sessionRequestStopSignal,
  sessionStateQuery,
  type AgentStop,
  type ConversationSlice,
  type ErrorCode,
  type SessionActivities,
  type SessionMessage,
  type SessionStatus,
  type SessionView,
  type SessionWorkflowInput,
} from '#libs/contracts';
import { appendExchange } from './proxies.js';
import type { agentRequestWorkflow } from './agent-request.workflow.js';
import { failedStop } from './agent-loop.js';
import { whenVersioned } from './versioning.js';

/** Continue as new after this many history events (well below Temporal's limits; a message costs
 * about twenty), unless the input says otherwise or the server suggests it earlier. */
export const CONTINUE_AS_NEW_AFTER_EVENTS = 2000;
/** ... or after this many bytes of history: a message adds its answer twice (the child's result and
 * the Update's), so a run hands over early enough to stay well under 1 MB (DESIGN.md section 9). */
export const CONTINUE_AS_NEW_AFTER_BYTES = 256 * 1024;

// The read model must follow the workflow, so a failing database is retried for as long as it takes.
const { recordSession } = proxyLocalActivities<SessionActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** A message waiting for (or being given) its answer. */
interface Pending {
  readonly message: SessionMessage;
  reply?: { readonly stop: AgentStop } | { readonly error: { readonly type: ErrorCode; readonly message: string } };
  /** Its request told the session it reached its last stop (completed, failed, expired or
   * cancelled): the session takes the next message, which waits only for this exchange to be
   * folded into the conversation. */
  requestEnded?: boolean;
}

/**
 * A session: a long-lived conversation. Each message runs as a child agentRequestWorkflow with the
 * last messages of the conversation as history (so credits, quota and tool pauses work as for
 * `/v1/agent`); one message at a time: a message sent while the previous one runs or is paused for
 * tool outputs is refused (`session_busy`) and leaves no trace. A durable idle timer, reset
 * by every message and paused while one is being answered, expires the session. The conversation
 * lives in the conversation store under the session's id: the workflow carries only its length,
 * passes the child a slice of it, and continues as new when idle and its history is long.
 */
export async function sessionWorkflow(input: SessionWorkflowInput): Promise<SessionView> {
  const carried = input.carried;
  let status: SessionStatus = 'active';
  // The length of the session's conversation (user and assistant messages count one each).
  let messageCount = carried?.messageCount ?? 0;
  // The idle timer runs on the workflow's clock, from the moment the session started.
  let lastActivityAt = carried?.lastActivityAt ?? Date.now();
  let revision = carried?.revision ?? 0;
  let endedAt = 0;
  // A message accepted and not started yet: at most one, taken while the previous exchange is
  // being folded into the conversation once its request has ended.
  const queue: Pending[] = [];
  let current: Pending | undefined;

  const view = (): SessionView => ({
    sessionId: input.sessionId,
    projectId: input.projectId,
    status,
    createdAt: input.createdAt,
    lastActivityAt,
    expiresAt: status === 'ended' ? endedAt : lastActivityAt + input.idleTimeoutMs,
    messageCount,
    revision,
    ...(current ? { activeRequestId: current.message.requestId } : {}),
    queuedMessages: queue.length,
  });

  const record = async (): Promise<void> => {
    revision += 1;
    await recordSession(view());
  };

  const setStatus = (next: SessionStatus): void => {
    status = next;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.agentStatus, value: next }]);
  };

  /** The contract's refusal of a message or an end for this session, if any. */
  const refuse = (projectId: string): void => {
    // Another project's session does not exist for the caller.
    if (projectId !== input.projectId) {
      throw ApplicationFailure.create({ type: 'session_not_found', message: 'No session with this id exists in this project.', nonRetryable: true });
    }
    if (status === 'expired') {
      throw ApplicationFailure.create({ type: 'session_expired', message: 'The session expired after a period without messages. Start a new session.', nonRetryable: true });
    }
    if (status === 'ended') {
      throw ApplicationFailure.create({ type: 'session_ended', message: 'The session was ended. Start a new session.', nonRetryable: true });
    }
  };

  /** The message that keeps the session busy, if any: one accepted and not started yet, or the one
   * being answered until its request ends (running, or paused for tool outputs). */
  const busyWith = (): Pending | undefined => queue.at(-1) ?? (current && !current.requestEnded ? current : undefined);

  setHandler(sessionStateQuery, view);

  setHandler(
    sendSessionMessageUpdate,
    async (message) => {
      const entry: Pending = { message };
      queue.push(entry);
      // A message accepted resets the idle timer (contract section 3.2).
      lastActivityAt = Date.now();
      await condition(() => entry.reply !== undefined);
      const reply = entry.reply!;
      if ('error' in reply) throw ApplicationFailure.create({ type: reply.error.type, message: reply.error.message, nonRetryable: true });
      return reply.stop;
    },
    {
      // Refusals here record nothing (a validator leaves no trace in history): no quota, no
      // credits, no event; the api saves no answer under the message's Idempotency-Key.
      validator: (message: SessionMessage) => {
        refuse(message.projectId);
        if (Date.now() > message.acceptBy) {
          // The api stopped waiting and told its caller so: the message must not run behind its back.
          throw ApplicationFailure.create({ type: 'compute_unavailable', message: 'The session did not take the message up in time.', nonRetryable: true });
        }
        const busy = busyWith();
        if (busy) {
          throw ApplicationFailure.create({
            type: 'session_busy',
            message: `The session's previous message (request ${busy.message.requestId}) is still running or waiting for tool outputs: submit its tool outputs, cancel it or wait for its answer, then send this message again. Nothing was recorded.`,
            nonRetryable: true,
          });
        }
      },
    },
  );

  setHandler(
    endSessionUpdate,
    async () => {
      endedAt = Date.now();
      setStatus('ended');
      for (const waiting of queue.splice(0)) {
        waiting.reply = { error: { type: 'session_ended', message: 'The session was ended before this message was answered.' } };
      }
      await record();
      return view();
    },
    { validator: ({ projectId }: { projectId: string }) => refuse(projectId) },
  );

  setHandler(sessionRequestStopSignal, (stop) => {
    if (current?.message.requestId !== stop.requestId) return;
    lastActivityAt = Date.now();
    // The request told its last stop before anyone could see it (a tool-outputs or cancel answer,
    // a stream's end): the session is free for the next message from here. Its own caller still
    // hears a stop that did not pause from answer(), once the exchange is in the conversation.
    if (FINAL_STATUSES.has(stop.status)) {
      current.requestEnded = true;
      return;
    }
    // A pause answers the message; the caller resumes the paused request directly.
    current.reply ??= { stop };
  });

  /** Runs one message as a child request and folds its answer into the conversation. */
  const answer = async (entry: Pending): Promise<void> => {
    current = entry;
    const { acceptBy: _acceptBy, ...request } = entry.message;
    // At most 50 messages reach the model, the new user message included.
    const history: ConversationSlice = { id: input.sessionId, from: Math.max(0, messageCount - (SESSION_LIMITS.historyMessages - 1)), to: messageCount };
    let final: AgentStop;
    try {
      const child = await startChild<typeof agentRequestWorkflow>('agentRequestWorkflow', {
        workflowId: agentRequestWorkflowId(request.requestId),
        args: [{ ...request, history, sessionId: input.sessionId }],
        // A request outlives the session's run: its credits settle and its tool context holds.
        parentClosePolicy: 'ABANDON',
        // A request id runs once: a message whose request already ran is never run again.
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        workflowExecutionTimeout: '24 hours',
        typedSearchAttributes: [
          { key: SEARCH_ATTRIBUTES.projectId, value: input.projectId },
          { key: SEARCH_ATTRIBUTES.agentStatus, value: 'in_progress' },
          { key: SEARCH_ATTRIBUTES.capabilities, value: [...request.capabilities] },
        ],
      });
      final = await child.result();
    } catch (e) {
      log.warn('session request failed to run', { sessionId: input.sessionId, requestId: request.requestId, error: e instanceof Error ? e.message : String(e) });
      final = failedStop(initialStop({ ...request, sessionId: input.sessionId }), { code: 'compute_error', message: 'The agent run failed.' });
    }
    // Only a finished exchange enters the conversation: a failed or expired request leaves no trace.
    if (final.status === 'completed') {
      const exchange = { projectId: input.projectId, sessionId: input.sessionId, at: messageCount, requestId: request.requestId };
      await appendExchange({ ...exchange, userSeq: history.to - history.from, keep: SESSION_LIMITS.historyMessages });
      messageCount += 2;
    }
    lastActivityAt = Date.now();
    current = undefined;
    // The read model is current before the caller hears the answer of a request that did not pause.
    await record();
    entry.reply ??= { stop: final };
  };

  const continueAsNewDue = (): boolean => {
    const info = workflowInfo();
    return (
      info.continueAsNewSuggested ||
      info.historyLength >= (input.continueAsNewAfterEvents ?? CONTINUE_AS_NEW_AFTER_EVENTS) ||
      info.historySize >= (input.continueAsNewAfterBytes ?? CONTINUE_AS_NEW_AFTER_BYTES)
    );
  };

  while (status === 'active') {
    const next = queue.shift();
    if (next) {
      await answer(next);
      continue;
    }
    if (continueAsNewDue()) {
      // Every accepted message has been answered and nothing is running: hand over, unless a
      // message arrives meanwhile (it is answered first and the hand-over tried again).
      await condition(() => queue.length > 0 || status !== 'active' || allHandlersFinished());
      if (queue.length === 0 && status === 'active') {
        return continueAsNew<typeof sessionWorkflow>({
          ...input,
          carried: { messageCount, lastActivityAt, revision },
        });
      }
      continue;
    }
    const idleLeft = lastActivityAt + input.idleTimeoutMs - Date.now();
    const woken = idleLeft > 0 && (await condition(() => queue.length > 0 || status !== 'active', idleLeft));
    if (!woken && queue.length === 0 && status === 'active') {
      setStatus('expired');
      await record();
    }
  }
  await condition(allHandlersFinished);
  return view();
}

// Worker Versioning (DESIGN section 10): a session lives for hours and moves to the current build
// at its next workflow task, so its code changes only behind patched() (docs/decisions.md).
setWorkflowOptions(whenVersioned('AUTO_UPGRADE'), sessionWorkflow);
