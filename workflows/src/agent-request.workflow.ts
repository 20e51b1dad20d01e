import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  log,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import {
  blobMarker,
  firstStopUpdate,
  SEARCH_ATTRIBUTES,
  sessionRequestStopSignal,
  sessionWorkflowId,
  stateQuery,
  submitToolOutputsUpdate,
  type AgentActivities,
  type AgentError,
  type AgentRequestInput,
  type AgentStatus,
  type AgentStop,
  type Capability,
  type ChatMessage,
  type FileRef,
  type StreamEvent,
  type ToolCall,
  type ToolOutputsSubmission,
  type ToolSpec,
} from '#libs/contracts';

/** How long the caller has to submit tool outputs (contract section 3.1). */
export const TOOL_CONTEXT_LIFETIME = '5 minutes';
/** Model calls one leg may make before it is stopped as a runaway. */
export const MAX_MODEL_CALLS_PER_LEG = 12;

// The money and event steps: short PostgreSQL transactions, each idempotent by request id. A
// database that blinks must not fail a run that is paid for, so they retry with backoff for up to
// 15 minutes; should that run out, the clean-up releases the reservation (or the reconciler does).
const { admitRequest, recordStop, releaseReservation, recordToolOutputs } = proxyLocalActivities<AgentActivities>({
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '15 minutes',
  retry: { initialInterval: '200 ms', backoffCoefficient: 2, maximumInterval: '15 seconds' },
});

const { emitStreamEvents } = proxyLocalActivities<AgentActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 ms', maximumAttempts: 5 },
});

const { builtinTools } = proxyLocalActivities<AgentActivities>({ startToCloseTimeout: '5 seconds' });

const { callModel } = proxyActivities<AgentActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '30 seconds',
  // 429 and 5xx from the provider retry with backoff; a rejected request (4xx) is non-retryable.
  retry: { initialInterval: '500 ms', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 4, nonRetryableErrorTypes: ['compute_error', 'service_unavailable'] },
});

const { runBuiltinTool } = proxyActivities<AgentActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500 ms', maximumAttempts: 3 },
});

/** The model-call failure in contract terms. */
function toAgentError(e: unknown): AgentError {
  const cause = e instanceof ActivityFailure ? e.cause : e;
  if (cause instanceof ApplicationFailure) {
    if (cause.type === 'compute_error' || cause.type === 'service_unavailable') {
      return { code: cause.type, message: cause.message };
    }
    return { code: 'compute_unavailable', message: `The language model could not be reached: ${cause.message}` };
  }
  return { code: 'compute_unavailable', message: 'The language model could not be reached.' };
}

/** Sessions: a session's request tells its session that it paused (the session answers its caller
 * with the pause and keeps its idle timer still; the request's end reaches it as the child's result).
 * A session that is gone does not stop the request. */
async function notifySession(sessionId: string, stop: AgentStop): Promise<void> {
  try {
    await getExternalWorkflowHandle(sessionWorkflowId(sessionId)).signal(sessionRequestStopSignal, stop);
  } catch (e) {
    log.warn('could not tell the session about a pause', { sessionId, requestId: stop.requestId, error: e instanceof Error ? e.message : String(e) });
  }
}

/**
 * One agent request: admit it (quota, credit reservation), run the agent loop (model calls and
 * built-in tools), pause for custom tool outputs for up to 5 minutes at a time, and settle the
 * credits at the first stop. The api waits for the first stop with Update-with-Start.
 */
export async function agentRequestWorkflow(input: AgentRequestInput): Promise<AgentStop> {
  const used = new Set<Capability>();
  const files: FileRef[] = [];
  let state: AgentStop = {
    requestId: input.requestId,
    projectId: input.projectId,
    status: 'in_progress',
    stop: 0,
    capabilitiesUsed: [],
    files: [],
    tokensUsed: 0,
    creditsThisRequest: 0,
    creditsRemaining: 0,
    requestsUsed: 0,
    ...(input.sessionId ? { sessionId: input.sessionId } : {}),
  };
  let pendingOutputs: Map<string, string> | undefined;

  let legInputTokens = 0;
  let legOutputTokens = 0;
  // Streaming: the SSE id of the next event; token events are published by the model activity.
  let streamSeq = 1;
  const emit = async (events: readonly Omit<StreamEvent, 'seq'>[]): Promise<void> => {
    if (!input.stream) return;
    ({ nextSeq: streamSeq } = await emitStreamEvents({ requestId: input.requestId, projectId: input.projectId, events }));
  };
  // A stop is recorded before anyone can see it: its event, the settlement of the reservation at
  // the first stop and its usage event, in one transaction (libs/metering prices it).
  const setStatus = async (status: Exclude<AgentStatus, 'in_progress'>, patch: Partial<AgentStop>): Promise<void> => {
    const stop = state.stop + 1;
    const { creditsThisRequest, creditsRemaining } = await recordStop({
      requestId: input.requestId,
      projectId: input.projectId,
      ...(input.sessionId ? { sessionId: input.sessionId } : {}),
      plan: input.plan,
      stop,
      status,
      capabilitiesUsed: [...used],
      surcharges: input.surcharges,
      inputTokens: legInputTokens,
      outputTokens: legOutputTokens,
      ...(patch.error ? { errorCode: patch.error.code } : {}),
    });
    const next: AgentStop = {
      ...state,
      ...patch,
      status,
      stop,
      capabilitiesUsed: [...used],
      files: [...files],
      tokensUsed: legInputTokens + legOutputTokens,
      creditsThisRequest,
      creditsRemaining,
    };
    if (status === 'completed') {
      const usage = { credits_this_request: next.creditsThisRequest, credits_remaining: next.creditsRemaining, tokens_used: next.tokensUsed };
      await emit([{ type: 'done', data: { id: input.requestId, status, usage } }]);
    } else if (status === 'failed' || status === 'expired') {
      const error = next.error ?? { code: 'context_expired', message: 'The request expired.' };
      await emit([{ type: 'error', data: { code: error.code, message: error.message } }]);
    }
    state = next;
    legInputTokens = 0;
    legOutputTokens = 0;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.agentStatus, value: status }]);
  };

  setHandler(stateQuery, () => state);
  setHandler(firstStopUpdate, async () => {
    await condition(() => state.status !== 'in_progress');
    return state;
  });
  setHandler(
    submitToolOutputsUpdate,
    async (submission) => {
      const outputs = new Map<string, string>();
      for (const o of submission.outputs) outputs.set(o.toolCallId, o.blobId ? blobMarker(o.blobId) : (o.output ?? ''));
      const stopBefore = state.stop;
      pendingOutputs = outputs;
      state = { ...state, status: 'in_progress', toolCalls: undefined };
      upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.agentStatus, value: 'in_progress' }]);
      await condition(() => state.stop > stopBefore && state.status !== 'in_progress');
      return state;
    },
    {
      validator: (submission: ToolOutputsSubmission) => {
        if (submission.projectId !== input.projectId || state.status !== 'requires_tool_outputs' || pendingOutputs !== undefined) {
          throw ApplicationFailure.create({ type: 'context_expired', message: 'The request is not waiting for tool outputs.' });
        }
        const pending = new Set((state.toolCalls ?? []).map((c) => c.id));
        const given = submission.outputs.map((o) => o.toolCallId);
        const unknown = given.filter((id) => !pending.has(id));
        const missing = [...pending].filter((id) => !given.includes(id));
        const duplicated = given.filter((id, i) => given.indexOf(id) !== i);
        if (unknown.length || missing.length || duplicated.length) {
          const parts = [
            unknown.length ? `unknown tool_call_id: ${unknown.join(', ')}` : '',
            missing.length ? `missing outputs for: ${missing.join(', ')}` : '',
            duplicated.length ? `duplicated tool_call_id: ${[...new Set(duplicated)].join(', ')}` : '',
          ].filter(Boolean);
          throw ApplicationFailure.create({ type: 'invalid_tool_outputs', message: `tool_outputs must answer exactly the pending tool calls (${parts.join('; ')}).` });
        }
      },
    },
  );

  const finish = async (): Promise<AgentStop> => {
    await condition(allHandlersFinished);
    return state;
  };

  /** The agent loop after admission, until the request completes, fails or expires. */
  const run = async (): Promise<void> => {
    const offered = await builtinTools({ capabilities: input.capabilities });
    const capabilityOfTool = new Map(offered.tools.map((t) => [t.name, t.capability] as const));
    const tools: ToolSpec[] = [
      ...input.tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
      ...offered.tools.map(({ name, description, parameters }) => ({ name, description, parameters })),
    ];
    const customToolNames = new Set(input.tools.map((t) => t.name));
    const conversation: ChatMessage[] = [...input.history, { role: 'user', content: input.message }];

    for (;;) {
      let modelCalls = 0;
      let paused: ToolCall[] | undefined;
      let reply: string | undefined;
      try {
        while (reply === undefined && paused === undefined) {
          if (++modelCalls > MAX_MODEL_CALLS_PER_LEG) {
            throw ApplicationFailure.create({ type: 'compute_error', message: `The agent did not finish within ${MAX_MODEL_CALLS_PER_LEG} model calls.`, nonRetryable: true });
          }
          const turn = await callModel({
            requestId: input.requestId,
            projectId: input.projectId,
            messages: conversation,
            tools,
            files: input.files,
            stream: input.stream,
            ...(input.stream ? { streamSeq } : {}),
          });
          streamSeq += turn.streamed ?? 0;
          legInputTokens += turn.usage.inputTokens;
          legOutputTokens += turn.usage.outputTokens;
          used.add('chat');
          conversation.push({ role: 'assistant', content: turn.content, toolCalls: turn.toolCalls.length ? turn.toolCalls : undefined });
          if (turn.toolCalls.length === 0) {
            reply = turn.content;
          } else if (turn.toolCalls.some((c) => customToolNames.has(c.name))) {
            // The caller runs its own tools; built-in calls in the same turn are answered first.
            for (const call of turn.toolCalls.filter((c) => !customToolNames.has(c.name))) {
              conversation.push({ role: 'tool', toolCallId: call.id, name: call.name, content: 'This tool was not run: answer the custom tool calls first.' });
            }
            paused = turn.toolCalls.filter((c) => customToolNames.has(c.name));
          } else {
            for (const call of turn.toolCalls) {
              const capability = capabilityOfTool.get(call.name);
              if (!capability) {
                conversation.push({ role: 'tool', toolCallId: call.id, name: call.name, content: `Unknown tool "${call.name}".` });
                continue;
              }
              const startedAt = Date.now();
              await emit([{ type: 'tool_start', data: { tool: call.name, call_id: call.id } }]);
              const result = await runBuiltinTool({ requestId: input.requestId, projectId: input.projectId, call, files: input.files });
              await emit([{ type: 'tool_end', data: { tool: call.name, call_id: call.id, status: result.ok ? 'ok' : 'error', duration_ms: Date.now() - startedAt } }]);
              used.add(capability);
              files.push(...result.files);
              conversation.push({ role: 'tool', toolCallId: call.id, name: call.name, content: result.output });
            }
          }
        }
      } catch (e) {
        const error = toAgentError(e);
        log.warn('agent run failed', { requestId: input.requestId, code: error.code });
        await setStatus('failed', { error });
        return;
      }

      if (reply !== undefined) {
        const notes = input.capabilitiesRequested && offered.notes.length ? `\n\n${offered.notes.join('\n')}` : '';
        await setStatus('completed', { message: reply + (state.stop === 0 ? notes : ''), toolCalls: undefined });
        return;
      }

      await setStatus('requires_tool_outputs', { message: undefined, toolCalls: paused });
      if (input.sessionId) await notifySession(input.sessionId, state);
      const answered = await condition(() => pendingOutputs !== undefined, input.toolOutputsTimeoutMs ?? TOOL_CONTEXT_LIFETIME);
      if (!answered) {
        await setStatus('expired', { toolCalls: undefined });
        return;
      }
      const outputs = pendingOutputs ?? new Map<string, string>();
      pendingOutputs = undefined;
      await recordToolOutputs({ requestId: input.requestId, projectId: input.projectId, stop: state.stop, toolCallIds: [...outputs.keys()] });
      for (const call of paused ?? []) {
        const output = outputs.get(call.id) ?? '';
        conversation.push({ role: 'tool', toolCallId: call.id, name: call.name, content: output });
      }
    }
  };

  // The api gave up waiting for a worker and told its caller so: nothing runs, nothing is reserved.
  if (input.acceptBy !== undefined && Date.now() > input.acceptBy) {
    await setStatus('failed', { error: { code: 'compute_unavailable', message: 'No agent worker took the request up in time. Nothing was run or charged.' } });
    return finish();
  }

  // Admission: the quota counter and the credit reservation move together, or not at all.
  const admission = await admitRequest({ requestId: input.requestId, projectId: input.projectId, credits: input.maxCredits, monthlyQuota: input.monthlyQuota });
  if (!admission.ok) {
    await setStatus('failed', { error: admission.error, requestsUsed: admission.requestsUsed });
    return finish();
  }
  state = { ...state, creditsRemaining: admission.balance, requestsUsed: admission.requestsUsed };

  try {
    await run();
  } catch (e) {
    // Whatever ended the run before its first stop was recorded, the reservation goes back; a
    // release that cannot be made now is made by the reconciler.
    if (state.stop === 0) await CancellationScope.nonCancellable(() => releaseReservation({ requestId: input.requestId, projectId: input.projectId }));
    throw e;
  }
  return finish();
}
