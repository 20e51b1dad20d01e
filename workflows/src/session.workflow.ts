import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  log,
  patched,
  proxyLocalActivities,
  setHandler,
  setWorkflowOptions,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  agentRequestStartOptions,
  endSessionUpdate,
  SEARCH_ATTRIBUTES,
  sendSessionMessageUpdate,
  sessionRequestStopSignal,
  sessionStateQuery,
  type AgentStop,
  type SessionActivities,
  type SessionView,
  type SessionWorkflowInput,
} from '#libs/contracts';
import { appendExchange } from './proxies.js';
import type { agentRequestWorkflow } from './agent-request.workflow.js';
import { SessionLoop, type MessageRun, type Pending, type SessionRefusal } from './session-loop.js';
import { whenVersioned } from './versioning.js';

// The read model must follow the workflow, so a failing database is retried for as long as it takes.
const { recordSession } = proxyLocalActivities<SessionActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** A refusal as the failure the api maps to the contract's error (its type is the code). */
const failure = (refusal: SessionRefusal): ApplicationFailure =>
  ApplicationFailure.create({ ...refusal, nonRetryable: true });

/**
 * A session: a long-lived conversation. Each message runs as a child agentRequestWorkflow with the
 * last messages of the conversation as history (so credits, quota and tool pauses work as for
 * `/v1/agent`); one message at a time: a message sent while the previous one runs or is paused for
 * tool outputs is refused (`session_busy`) and leaves no trace. A durable idle timer, reset
 * by every message and paused while one is being answered, expires the session. The conversation
 * lives in the conversation store under the session's id: the workflow carries only its length,
 * passes the child a slice of it, and continues as new when idle and its history is long. The
 * decisions are session-loop.ts's; this function orders the steps and their durable waits.
 */
export async function sessionWorkflow(input: SessionWorkflowInput): Promise<SessionView> {
  const session = new SessionLoop(input, Date.now());
  const record = (): Promise<void> => recordSession(session.nextRecord());
  // The session's status as a search attribute, after each change.
  const showStatus = (): void =>
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.agentStatus, value: session.status }]);
  setSessionHandlers(session, record, showStatus);

  while (session.status === 'active') {
    const next = session.next();
    if (next) {
      await answer(session, next, record);
      continue;
    }
    if (session.continueAsNewDue(workflowInfo())) {
      // Every accepted message has been answered and nothing is running: hand over, unless a
      // message arrives meanwhile (it is answered first and the hand-over tried again).
      await condition(() => session.hasWork() || allHandlersFinished());
      if (session.idle()) return continueAsNew<typeof sessionWorkflow>(session.carriedInput());
      continue;
    }
    const idleLeft = session.idleLeft(Date.now());
    const woken = idleLeft > 0 && (await condition(() => session.hasWork(), idleLeft));
    if (!woken && session.idle()) {
      session.expire();
      showStatus();
      await record();
    }
  }
  await condition(allHandlersFinished);
  return session.view();
}

// Worker Versioning (DESIGN section 10): a session lives for hours and moves to the current build
// at its next workflow task, so its code changes only behind patched() (docs/decisions.md).
setWorkflowOptions(whenVersioned('AUTO_UPGRADE'), sessionWorkflow);

/** The session's query, its Updates (send a message, end the session) and its requests' signal. */
function setSessionHandlers(session: SessionLoop, record: () => Promise<void>, showStatus: () => void): void {
  setHandler(sessionStateQuery, () => session.view());

  setHandler(
    sendSessionMessageUpdate,
    async (message) => {
      const entry = session.accept(message, Date.now());
      await condition(() => entry.reply !== undefined);
      const reply = entry.reply!;
      if ('error' in reply) throw failure(reply.error);
      return reply.stop;
    },
    {
      // Refusals here record nothing (a validator leaves no trace in history): no quota, no
      // credits, no event; the api saves no answer under the message's Idempotency-Key.
      validator: (message) => {
        const refusal = session.messageRefusal(message, Date.now());
        if (refusal) throw failure(refusal);
      },
    },
  );

  setHandler(
    endSessionUpdate,
    async () => {
      session.end(Date.now());
      showStatus();
      await record();
      return session.view();
    },
    {
      validator: ({ projectId }) => {
        const refusal = session.refusal(projectId);
        if (refusal) throw failure(refusal);
      },
    },
  );

  setHandler(sessionRequestStopSignal, (stop) => session.requestStopped(stop, Date.now()));
}

/** Runs one message as a child request and folds its answer into the conversation. */
async function answer(session: SessionLoop, entry: Pending, record: () => Promise<void>): Promise<void> {
  const run = session.begin(entry, { windowStartsWithUser: patched('session-window-starts-with-user') });
  const final = await runRequest(session, run);
  const exchange = session.exchangeOf(run, final);
  if (exchange) await appendExchange(exchange);
  session.answered(exchange !== undefined, Date.now());
  // The read model is current before the caller hears the answer of a request that did not pause.
  await record();
  entry.reply ??= { stop: final };
}

/** The child request of a message, to its last stop; a child that cannot run is a failed stop. */
async function runRequest(session: SessionLoop, run: MessageRun): Promise<AgentStop> {
  try {
    const child = await startChild<typeof agentRequestWorkflow>('agentRequestWorkflow', {
      ...agentRequestStartOptions(run.childInput),
      args: [run.childInput],
      // A request outlives the session's run: its credits settle and its tool context holds.
      parentClosePolicy: 'ABANDON',
    });
    return await child.result();
  } catch (e) {
    const sessionId = run.childInput.sessionId;
    log.warn('session request failed to run', {
      sessionId,
      requestId: run.request.requestId,
      error: e instanceof Error ? e.message : String(e),
    });
    return session.failedToRun(run);
  }
}
