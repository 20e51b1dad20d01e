import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  log,
  patched,
  setHandler,
  setWorkflowOptions,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import {
  blobMarker,
  FINAL_STATUSES,
  firstStopUpdate,
  initialStop,
  SEARCH_ATTRIBUTES,
  stateQuery,
  submitToolOutputsUpdate,
  type AgentRequestInput,
  type AgentStatus,
  type AgentStop,
  type BeginRequestResult,
  type Capability,
  type ChatMessage,
  type StreamEvent,
  type ToolCallRef,
} from '#libs/contracts';
import * as acts from './proxies.js';
import { StoredConversation, streamedSoFar } from './stored-conversation.js';
import { notifySession } from './session-notify.js';
import {
  completedMessage,
  endEvents,
  nextStep,
  offerTools,
  outputMessages,
  Tally,
  toAgentError,
  toolOutputsRefusal,
  type LegEnd,
  type LoopTools,
} from './agent-loop.js';
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
  const request = new AgentRequest(input);
  request.setHandlers();
  try {
    // The api gave up waiting for a worker and told its caller so: nothing runs, nothing is reserved.
    // Since the patch, admission decides it (a request not admitted by then is refused there), so a
    // workflow task re-run after the deadline goes on with the request it admitted in time; before
    // it, this workflow's clock decided, and a re-run past the deadline failed a charged request.
    const deadlineAtAdmission = patched('stop-recorded-once');
    if (!deadlineAtAdmission && input.acceptBy !== undefined && Date.now() > input.acceptBy) {
      await request.setStatus('failed', {
        error: {
          code: 'compute_unavailable',
          message: 'No agent worker took the request up in time. Nothing was run or charged.',
        },
      });
      return await request.finish();
    }
    const begun = await request.begin(deadlineAtAdmission);
    if (!begun.ok) {
      await request.setStatus('failed', { error: begun.error, requestsUsed: begun.requestsUsed });
      return await request.finish();
    }
    await request.run(begun);
  } catch (e) {
    return request.ended(e);
  }
  return request.finish();
}

// Worker Versioning (DESIGN section 10): a request finishes on the build that started it; its
// code may change freely between builds, and an old build keeps polling until its runs drain.
setWorkflowOptions(whenVersioned('PINNED'), agentRequestWorkflow);

/** One request's state and its steps; the decisions are agent-loop.ts's. */
class AgentRequest {
  private readonly ids: { readonly requestId: string; readonly projectId: string };
  private readonly tally = new Tally();
  private state: AgentStop;
  private pendingOutputs: Map<string, string> | undefined;
  // Streaming: the SSE id of the next event; token events are published by the model activity.
  private streamSeq = 1;

  constructor(private readonly input: AgentRequestInput) {
    this.ids = { requestId: input.requestId, projectId: input.projectId };
    this.state = initialStop(input);
  }

  private async emit(events: readonly Omit<StreamEvent, 'seq'>[]): Promise<void> {
    if (this.input.stream && events.length > 0)
      ({ nextSeq: this.streamSeq } = await acts.emitStreamEvents({ ...this.ids, events, fromSeq: this.streamSeq }));
  }

  // A stop is recorded before anyone can see it: its event, the settlement of the reservation at
  // the first stop and its usage event, in one transaction (libs/metering prices it); never cut
  // short by a cancellation, which comes at the next wait. A stop is recorded once: a re-run of
  // the step (a workflow task retried after recordStop committed) adopts the stop as first
  // recorded, whatever outcome the re-run brought (a cancellation that arrived meanwhile, say), so
  // every caller, event and webhook sees one outcome per stop (DESIGN.md section 10).
  setStatus(status: Exclude<AgentStatus, 'in_progress'>, patch: Partial<AgentStop>): Promise<void> {
    const { input, tally } = this;
    return CancellationScope.nonCancellable(async () => {
      // The stop's content goes with it to PostgreSQL (request_views), so reads outlive this workflow.
      const shown = { ...this.state, ...patch };
      // A session's request tells its session that it ended before the end shows anywhere (a read, a
      // stream's last event, a tool-outputs or cancel answer): a caller who saw it may send the next
      // message at once without finding the session busy.
      if (input.sessionId && FINAL_STATUSES.has(status)) await notifySession(input.sessionId, { ...shown, status });
      const view = {
        message: shown.message,
        toolCalls: shown.toolCalls,
        error: shown.error,
        requestsUsed: shown.requestsUsed,
      };
      const recorded = await acts.recordStop({
        ...tally.stopRecord(input, this.state.stop + 1, status, patch.error),
        view,
      });
      const next = recorded.recorded
        ? tally.adoptStop(this.state, recorded.recorded, recorded)
        : tally.nextStop(this.state, status, patch, recorded);
      // The stream's end follows the recorded stop. A store that refuses it (its retries run out)
      // does not undo the stop, which is charged: the run goes on, and a reader's stream ends from
      // the recorded stop (libs/streaming's SseSession serves the end a run did not store).
      await this.emit(endEvents(next)).catch((e: unknown) => {
        log.warn('the stream end event could not be stored', {
          requestId: input.requestId,
          error: e instanceof Error ? e.message : String(e),
        });
      });
      this.state = next;
      upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.agentStatus, value: next.status }]);
    });
  }

  // The handlers' waits outlive a cancellation: their callers get the cancelled stop.
  private stopAfter(stop: number): Promise<void> {
    return CancellationScope.nonCancellable(() =>
      condition(() => this.state.stop > stop && this.state.status !== 'in_progress'),
    );
  }

  setHandlers(): void {
    setHandler(stateQuery, () => this.state);
    setHandler(firstStopUpdate, () => this.stopAfter(0).then(() => this.state));
    setHandler(
      submitToolOutputsUpdate,
      async ({ outputs }) => {
        const stopBefore = this.state.stop;
        this.pendingOutputs = new Map(
          outputs.map((o) => [o.toolCallId, o.blobId ? blobMarker(o.blobId) : (o.output ?? '')]),
        );
        this.state = { ...this.state, status: 'in_progress', toolCalls: undefined };
        upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.agentStatus, value: 'in_progress' }]);
        await this.stopAfter(stopBefore);
        return this.state;
      },
      {
        validator: (submission) => {
          const refusal = toolOutputsRefusal(this.state, this.pendingOutputs === undefined, submission);
          if (refusal) throw ApplicationFailure.create(refusal);
        },
      },
    );
  }

  // Admission (the quota counter and the credit reservation move together, or not at all) and the
  // conversation, whole: a cancellation waits for it, so the cancelled stop settles what it reserved.
  async begin(deadlineAtAdmission: boolean): Promise<BeginRequestResult> {
    const { ids, input } = this;
    const { maxCredits: credits, monthlyQuota, capabilities, tools: customTools, history, message } = input;
    const acceptBy = deadlineAtAdmission ? { acceptBy: input.acceptBy } : {};
    // Admitted by the api (DESIGN.md section 10): the step takes the request up instead of admitting
    // it. Only a request the api admitted asks (its input says so), so the histories of requests
    // admitted here (a previous release's api) replay as they ran.
    const admitted = input.admitted === true && patched('admission-in-api') ? { admitted: true } : {};
    const begun = await CancellationScope.nonCancellable(() =>
      acts.beginRequest({
        ...ids,
        credits,
        monthlyQuota,
        capabilities,
        customTools,
        history,
        message,
        ...acceptBy,
        ...admitted,
      }),
    );
    if (begun.ok) this.state = { ...this.state, creditsRemaining: begun.balance, requestsUsed: begun.requestsUsed };
    return begun;
  }

  /** The agent loop after admission, until the request completes, fails or expires. */
  async run(begun: Extract<BeginRequestResult, { ok: true }>): Promise<void> {
    const { input } = this;
    const tools = offerTools(input.tools, begun.builtin);
    const conversation = new StoredConversation(input.requestId, input.projectId, input.longActivityTaskQueue).opened(
      begun.length,
    );
    for (let answers: ChatMessage[] = []; ;) {
      const next = await this.runLeg(conversation, tools.loop, answers).catch((e: unknown): LegEnd => {
        if (isCancellation(e)) throw e;
        return { kind: 'fail', error: toAgentError(e) };
      });
      if (next.kind === 'fail') {
        log.warn('agent run failed', { requestId: input.requestId, code: next.error.code });
        await this.setStatus('failed', { error: next.error });
      } else if (next.kind === 'reply') {
        const message = completedMessage(next.text, begun.notes, {
          firstStop: this.state.stop === 0,
          capabilitiesRequested: input.capabilitiesRequested,
        });
        await this.setStatus('completed', { message, toolCalls: undefined });
      } else {
        await this.setStatus('requires_tool_outputs', { message: undefined, toolCalls: next.toolCalls });
      }
      // The stop as recorded decides what follows (a re-run may have adopted another outcome).
      if (this.state.status !== 'requires_tool_outputs') return;
      const outputs = await this.toolOutputs();
      if (!outputs) return;
      answers = [...(next.kind === 'pause' ? next.answers : []), ...outputs];
    }
  }

  /** Waits for the paused request's tool outputs and records them, as the messages that answer its
   * tool calls; undefined when the tool context expired first (the request is then expired). */
  private async toolOutputs(): Promise<ChatMessage[] | undefined> {
    const { input } = this;
    const paused = this.state.toolCalls ?? [];
    if (input.sessionId) await notifySession(input.sessionId, this.state);
    if (
      !(await condition(() => this.pendingOutputs !== undefined, input.toolOutputsTimeoutMs ?? TOOL_CONTEXT_LIFETIME))
    ) {
      await this.setStatus('expired', { toolCalls: undefined });
      return undefined;
    }
    const outputs = this.pendingOutputs ?? new Map<string, string>();
    this.pendingOutputs = undefined;
    await acts.recordToolOutputs({ ...this.ids, stop: this.state.stop, toolCallIds: [...outputs.keys()] });
    return outputMessages(paused, outputs);
  }

  /** One leg: store what the caller answered, then model calls and built-in tools until a reply or a pause. */
  private async runLeg(
    conversation: StoredConversation,
    tools: LoopTools,
    answers: readonly ChatMessage[],
  ): Promise<LegEnd> {
    const { input } = this;
    await conversation.append(answers);
    for (let modelCalls = 1; ; modelCalls++) {
      const { step, seq } = await conversation.callModel({
        files: input.files,
        stream: input.stream,
        streamSeq: this.streamSeq,
      });
      this.streamSeq += step.streamed ?? 0;
      this.tally.modelStep(step);
      const next = nextStep(step, tools, modelCalls);
      if (next.kind !== 'tools') return next;
      for (const action of next.actions) {
        if (action.kind === 'run') await this.runTool(conversation, seq, action.call, action.capability);
        else await conversation.append([action.message]);
      }
    }
  }

  private async runTool(
    conversation: StoredConversation,
    callSeq: number,
    call: ToolCallRef,
    capability: Capability,
  ): Promise<void> {
    const startedAt = Date.now();
    await this.emit([{ type: 'tool_start', data: { tool: call.name, call_id: call.id } }]);
    const result = await conversation.runTool(callSeq, call.id, this.input.files);
    await this.emit([
      {
        type: 'tool_end',
        data: {
          tool: call.name,
          call_id: call.id,
          status: result.ok ? 'ok' : 'error',
          duration_ms: Date.now() - startedAt,
        },
      },
    ]);
    this.tally.tool(capability, result.files);
  }

  /** The request's last state, once every handler has finished. */
  finish(): Promise<AgentStop> {
    return CancellationScope.nonCancellable(() => condition(allHandlersFinished).then(() => this.state));
  }

  /** What ended the run by throwing: a cancellation, or a failure before or after its first stop. */
  async ended(e: unknown): Promise<AgentStop> {
    // Cancelled while running or paused: the model call is aborted (what it streamed is the partial
    // message), and the cancelled stop settles the reservation by what ran: a model that streamed
    // tokens answered, and the customer received that work (DESIGN.md section 10). A finished one
    // stays so. (A re-run that adopts a pause recorded first records the cancellation after it.)
    if (isCancellation(e)) {
      while (!FINAL_STATUSES.has(this.state.status)) {
        const streamed = this.state.message ?? (await streamedSoFar(this.input, this.streamSeq));
        if (streamed) this.tally.streamedAnswer();
        await this.setStatus('cancelled', { toolCalls: undefined, message: streamed });
      }
      return this.finish();
    }
    // Whatever ended the run before its first stop was recorded, the reservation goes back; a
    // release that cannot be made now is made by the reconciler.
    if (this.state.stop === 0) await CancellationScope.nonCancellable(() => acts.releaseReservation(this.ids));
    throw e;
  }
}
