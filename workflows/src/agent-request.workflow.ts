import { allHandlersFinished, ApplicationFailure, CancellationScope, condition, isCancellation, log, patched, setHandler, setWorkflowOptions, upsertSearchAttributes } from '@temporalio/workflow';
import { blobMarker, FINAL_STATUSES, firstStopUpdate, initialStop, SEARCH_ATTRIBUTES, stateQuery, submitToolOutputsUpdate, type AgentRequestInput, type AgentStatus, type AgentStop, type BeginRequestResult, type Capability, type ChatMessage, type StreamEvent, type ToolCallRef } from '#libs/contracts';
import * as acts from './proxies.js';
import { StoredConversation, streamedSoFar } from './stored-conversation.js';
import { notifySession } from './session-notify.js';
import { completedMessage, endEvents, nextStep, offerTools, outputMessages, Tally, toAgentError, toolOutputsRefusal, type LegEnd } from './agent-loop.js';
import { whenVersioned } from './versioning.js';

/** How long the caller has to submit tool outputs (contract section 3.1). */
export const TOOL_CONTEXT_LIFETIME = '5 minutes';

/**
 * One agent request: admit it (quota, credit reservation), run the agent loop (model calls and
 * built-in tools, decided by agent-loop.ts), pause for custom tool outputs for up to 5 minutes at a
 * time, and settle the credits at the first stop. The api waits for the first stop with
 * Update-with-Start. The conversation lives in the conversation store: this workflow carries only
 * its id and length, so its history stays small whatever the sizes of messages, files and outputs.
 */
export async function agentRequestWorkflow(input: AgentRequestInput): Promise<AgentStop> {
  const ids = { requestId: input.requestId, projectId: input.projectId };
  const tally = new Tally();
  let state = initialStop(input);
  let pendingOutputs: Map<string, string> | undefined;
  // Streaming: the SSE id of the next event; token events are published by the model activity.
  let streamSeq = 1;
  const emit = async (events: readonly Omit<StreamEvent, 'seq'>[]): Promise<void> => {
    if (input.stream && events.length > 0) ({ nextSeq: streamSeq } = await acts.emitStreamEvents({ ...ids, events, fromSeq: streamSeq }));
  };
  // A stop is recorded before anyone can see it: its event, the settlement of the reservation at
  // the first stop and its usage event, in one transaction (libs/metering prices it); never cut
  // short by a cancellation, which comes at the next wait. A stop is recorded once: a re-run of
  // the step (a workflow task retried after recordStop committed) adopts the stop as first
  // recorded, whatever outcome the re-run brought (a cancellation that arrived meanwhile, say), so
  // every caller, event and webhook sees one outcome per stop (DESIGN.md section 10).
  const setStatus = (status: Exclude<AgentStatus, 'in_progress'>, patch: Partial<AgentStop>): Promise<void> => CancellationScope.nonCancellable(async () => {
    // The stop's content goes with it to PostgreSQL (request_views), so reads outlive this workflow.
    const shown = { ...state, ...patch };
    // A session's request tells its session that it ended before the end shows anywhere (a read, a
    // stream's last event, a tool-outputs or cancel answer): a caller who saw it may send the next
    // message at once without finding the session busy.
    if (input.sessionId && FINAL_STATUSES.has(status)) await notifySession(input.sessionId, { ...shown, status });
    const view = { message: shown.message, toolCalls: shown.toolCalls, error: shown.error, requestsUsed: shown.requestsUsed };
    const recorded = await acts.recordStop({ ...tally.stopRecord(input, state.stop + 1, status, patch.error), view });
    const next = recorded.recorded ? tally.adoptStop(state, recorded.recorded, recorded) : tally.nextStop(state, status, patch, recorded);
    // The stream's end follows the recorded stop. A store that refuses it (its retries run out) does
    // not undo the stop, which is charged: the run goes on, and a reader's stream ends from the
    // recorded stop (libs/streaming's SseSession serves the end a run did not store).
    await emit(endEvents(next)).catch((e: unknown) => {
      log.warn('the stream end event could not be stored', { requestId: input.requestId, error: e instanceof Error ? e.message : String(e) });
    });
    state = next;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.agentStatus, value: next.status }]);
  });
  // The handlers' waits outlive a cancellation: their callers get the cancelled stop.
  const stopAfter = (stop: number): Promise<void> => CancellationScope.nonCancellable(() => condition(() => state.stop > stop && state.status !== 'in_progress'));

  setHandler(stateQuery, () => state);
  setHandler(firstStopUpdate, () => stopAfter(0).then(() => state));
  setHandler(
    submitToolOutputsUpdate,
    async ({ outputs }) => {
      const stopBefore = state.stop;
      pendingOutputs = new Map(outputs.map((o) => [o.toolCallId, o.blobId ? blobMarker(o.blobId) : (o.output ?? '')]));
      state = { ...state, status: 'in_progress', toolCalls: undefined };
      upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.agentStatus, value: 'in_progress' }]);
      await stopAfter(stopBefore);
      return state;
    },
    {
      validator: (submission) => {
        const refusal = toolOutputsRefusal(state, pendingOutputs === undefined, submission);
        if (refusal) throw ApplicationFailure.create(refusal);
      },
    },
  );

  /** The agent loop after admission, until the request completes, fails or expires. */
  const run = async (begun: Extract<BeginRequestResult, { ok: true }>): Promise<void> => {
    const tools = offerTools(input.tools, begun.builtin);
    const conversation = new StoredConversation(input.requestId, input.projectId).opened(begun.length);
    const runTool = async (callSeq: number, call: ToolCallRef, capability: Capability): Promise<void> => {
      const startedAt = Date.now();
      await emit([{ type: 'tool_start', data: { tool: call.name, call_id: call.id } }]);
      const result = await conversation.runTool(callSeq, call.id, input.files);
      await emit([{ type: 'tool_end', data: { tool: call.name, call_id: call.id, status: result.ok ? 'ok' : 'error', duration_ms: Date.now() - startedAt } }]);
      tally.tool(capability, result.files);
    };
    /** One leg: store what the caller answered, then model calls and built-in tools until a reply or a pause. */
    const runLeg = async (answers: readonly ChatMessage[]): Promise<LegEnd> => {
      await conversation.append(answers);
      for (let modelCalls = 1; ; modelCalls++) {
        const { step, seq } = await conversation.callModel({ files: input.files, stream: input.stream, streamSeq });
        streamSeq += step.streamed ?? 0;
        tally.modelStep(step);
        const next = nextStep(step, tools.loop, modelCalls);
        if (next.kind !== 'tools') return next;
        for (const action of next.actions) {
          if (action.kind === 'run') await runTool(seq, action.call, action.capability);
          else await conversation.append([action.message]);
        }
      }
    };

    for (let answers: ChatMessage[] = []; ; ) {
      const next = await runLeg(answers).catch((e: unknown): LegEnd => {
        if (isCancellation(e)) throw e;
        return { kind: 'fail', error: toAgentError(e) };
      });
      if (next.kind === 'fail') {
        log.warn('agent run failed', { requestId: input.requestId, code: next.error.code });
        await setStatus('failed', { error: next.error });
      } else if (next.kind === 'reply') {
        const message = completedMessage(next.text, begun.notes, { firstStop: state.stop === 0, capabilitiesRequested: input.capabilitiesRequested });
        await setStatus('completed', { message, toolCalls: undefined });
      } else {
        await setStatus('requires_tool_outputs', { message: undefined, toolCalls: next.toolCalls });
      }
      // The stop as recorded decides what follows (a re-run may have adopted another outcome).
      if (state.status !== 'requires_tool_outputs') return;
      const paused = state.toolCalls ?? [];
      if (input.sessionId) await notifySession(input.sessionId, state);
      if (!(await condition(() => pendingOutputs !== undefined, input.toolOutputsTimeoutMs ?? TOOL_CONTEXT_LIFETIME))) return setStatus('expired', { toolCalls: undefined });
      const outputs = pendingOutputs ?? new Map<string, string>();
      pendingOutputs = undefined;
      await acts.recordToolOutputs({ ...ids, stop: state.stop, toolCallIds: [...outputs.keys()] });
      answers = [...(next.kind === 'pause' ? next.answers : []), ...outputMessages(paused, outputs)];
    }
  };

  const finish = (): Promise<AgentStop> => CancellationScope.nonCancellable(() => condition(allHandlersFinished).then(() => state));
  try {
    // The api gave up waiting for a worker and told its caller so: nothing runs, nothing is reserved.
    // Since the patch, admission decides it (a request not admitted by then is refused there), so a
    // workflow task re-run after the deadline goes on with the request it admitted in time; before
    // it, this workflow's clock decided, and a re-run past the deadline failed a charged request.
    const deadlineAtAdmission = patched('stop-recorded-once');
    if (!deadlineAtAdmission && input.acceptBy !== undefined && Date.now() > input.acceptBy) {
      await setStatus('failed', { error: { code: 'compute_unavailable', message: 'No agent worker took the request up in time. Nothing was run or charged.' } });
      return await finish();
    }
    // Admission (the quota counter and the credit reservation move together, or not at all) and the
    // conversation, whole: a cancellation waits for it, so the cancelled stop settles what it reserved.
    const { maxCredits: credits, monthlyQuota, capabilities, tools: customTools, history, message } = input;
    const acceptBy = deadlineAtAdmission ? { acceptBy: input.acceptBy } : {};
    const begun = await CancellationScope.nonCancellable(() => acts.beginRequest({ ...ids, credits, monthlyQuota, capabilities, customTools, history, message, ...acceptBy }));
    if (!begun.ok) {
      await setStatus('failed', { error: begun.error, requestsUsed: begun.requestsUsed });
      return await finish();
    }
    state = { ...state, creditsRemaining: begun.balance, requestsUsed: begun.requestsUsed };
    await run(begun);
  } catch (e) {
    // Cancelled while running or paused: the model call is aborted (what it streamed is the partial
    // message), and the cancelled stop settles the reservation by what ran: a model that streamed
    // tokens answered, and the customer received that work (DESIGN.md section 10). A finished one
    // stays so. (A re-run that adopts a pause recorded first records the cancellation after it.)
    if (isCancellation(e)) {
      while (!FINAL_STATUSES.has(state.status)) {
        const streamed = state.message ?? (await streamedSoFar(input, streamSeq));
        if (streamed) tally.streamedAnswer();
        await setStatus('cancelled', { toolCalls: undefined, message: streamed });
      }
      return finish();
    }
    // Whatever ended the run before its first stop was recorded, the reservation goes back; a
    // release that cannot be made now is made by the reconciler.
    if (state.stop === 0) await CancellationScope.nonCancellable(() => acts.releaseReservation(ids));
    throw e;
  }
  return finish();
}

// Worker Versioning (DESIGN section 10): a request finishes on the build that started it; its
// code may change freely between builds, and an old build keeps polling until its runs drain.
setWorkflowOptions(whenVersioned('PINNED'), agentRequestWorkflow);
