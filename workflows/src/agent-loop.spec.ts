import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { DEFAULT_CAPABILITY_SURCHARGES, initialStop, type AgentRequestInput, type ModelStep } from '#libs/contracts';
import {
  completedMessage,
  endEvents,
  failedStop,
  MAX_MODEL_CALLS_PER_LEG,
  nextStep,
  offerTools,
  outputMessages,
  Tally,
  toAgentError,
  toolOutputsRefusal,
} from './agent-loop.js';

const schema = { type: 'object', properties: {} };
const { offered, loop } = offerTools(
  [{ name: 'lookup', description: 'Look up', parameters: schema }],
  [
    { name: 'read_file', description: 'Read', parameters: schema, capability: 'documents' },
    { name: 'fetch_url', description: 'Fetch', parameters: schema, capability: 'research' },
  ],
);
const step = (patch: Partial<ModelStep>): ModelStep => ({
  toolCalls: [],
  usage: { inputTokens: 3, outputTokens: 2 },
  ...patch,
});
const request = { requestId: 'r1', projectId: 'p1' };

describe('the agent loop', () => {
  it("offers the caller's tools first, marked custom, and knows each built-in tool's capability", () => {
    expect(offered.map((t) => [t.name, t.custom])).toEqual([
      ['lookup', true],
      ['read_file', false],
      ['fetch_url', false],
    ]);
    expect(loop.capabilityOf.get('fetch_url')).toBe('research');
    expect(loop.custom.has('lookup')).toBe(true);
  });

  it('replies when the model called no tools', () => {
    expect(nextStep(step({ reply: 'Hello.' }), loop, 1)).toEqual({ kind: 'reply', text: 'Hello.' });
  });

  it("pauses for the caller's tools, and answers the built-in calls of the same turn without running them", () => {
    const next = nextStep(
      step({
        toolCalls: [
          { id: 'c1', name: 'read_file' },
          { id: 'c2', name: 'lookup', arguments: { q: 'x' } },
        ],
      }),
      loop,
      1,
    );
    expect(next).toEqual({
      kind: 'pause',
      toolCalls: [{ id: 'c2', name: 'lookup', arguments: { q: 'x' } }],
      answers: [
        {
          role: 'tool',
          toolCallId: 'c1',
          name: 'read_file',
          content: 'This tool was not run: answer the custom tool calls first.',
        },
      ],
    });
  });

  it('runs built-in tools in call order, and answers a tool that was not offered', () => {
    const next = nextStep(
      step({
        toolCalls: [
          { id: 'c1', name: 'fetch_url' },
          { id: 'c2', name: 'rm_rf' },
          { id: 'c3', name: 'read_file' },
        ],
      }),
      loop,
      1,
    );
    expect(next).toEqual({
      kind: 'tools',
      actions: [
        { kind: 'run', call: { id: 'c1', name: 'fetch_url' }, capability: 'research' },
        {
          kind: 'answer',
          message: { role: 'tool', toolCallId: 'c2', name: 'rm_rf', content: 'Unknown tool "rm_rf".' },
        },
        { kind: 'run', call: { id: 'c3', name: 'read_file' }, capability: 'documents' },
      ],
    });
  });

  it(`stops as a runaway when the ${MAX_MODEL_CALLS_PER_LEG}th model call of a leg still wants built-in tools`, () => {
    const tools = step({ toolCalls: [{ id: 'c1', name: 'fetch_url' }] });
    expect(nextStep(tools, loop, MAX_MODEL_CALLS_PER_LEG - 1).kind).toBe('tools');
    expect(nextStep(tools, loop, MAX_MODEL_CALLS_PER_LEG)).toEqual({
      kind: 'fail',
      error: {
        code: 'compute_error',
        message: `The agent did not finish within ${MAX_MODEL_CALLS_PER_LEG} model calls.`,
      },
    });
    // A reply or a pause on the last call is fine.
    expect(nextStep(step({ reply: 'done' }), loop, MAX_MODEL_CALLS_PER_LEG).kind).toBe('reply');
  });

  it('answers paused calls with the outputs in call order', () => {
    const outputs = new Map([
      ['c2', 'two'],
      ['c1', 'mas-blob://00000000-0000-0000-0000-000000000000'],
    ]);
    expect(
      outputMessages(
        [
          { id: 'c1', name: 'lookup', arguments: {} },
          { id: 'c2', name: 'lookup', arguments: {} },
        ],
        outputs,
      ),
    ).toEqual([
      { role: 'tool', toolCallId: 'c1', name: 'lookup', content: 'mas-blob://00000000-0000-0000-0000-000000000000' },
      { role: 'tool', toolCallId: 'c2', name: 'lookup', content: 'two' },
    ]);
  });

  it('adds the notes on unavailable capabilities to the first completed message only, when the caller named capabilities', () => {
    expect(
      completedMessage('Done.', ['web_search is not available'], { firstStop: true, capabilitiesRequested: true }),
    ).toBe('Done.\n\nweb_search is not available');
    expect(
      completedMessage('Done.', ['web_search is not available'], { firstStop: false, capabilitiesRequested: true }),
    ).toBe('Done.');
    expect(
      completedMessage('Done.', ['web_search is not available'], { firstStop: true, capabilitiesRequested: false }),
    ).toBe('Done.');
  });
});

describe('stops', () => {
  it('builds the initial and the failed stop in one place, for requests and sessions', () => {
    const initial = initialStop({ ...request, sessionId: 's1' });
    expect(initial).toEqual({
      ...request,
      sessionId: 's1',
      status: 'in_progress',
      stop: 0,
      capabilitiesUsed: [],
      files: [],
      tokensUsed: 0,
      creditsThisRequest: 0,
      creditsRemaining: 0,
      requestsUsed: 0,
    });
    expect(initialStop(request)).not.toHaveProperty('sessionId');
    expect(failedStop(initial, { code: 'compute_error', message: 'The agent run failed.' })).toMatchObject({
      status: 'failed',
      stop: 1,
      creditsThisRequest: 0,
      error: { code: 'compute_error' },
    });
  });

  it('tallies capabilities and files over the run, tokens per leg', () => {
    const input = { ...request, plan: 'pro', surcharges: DEFAULT_CAPABILITY_SURCHARGES } as AgentRequestInput;
    const tally = new Tally();
    tally.modelStep(step({}));
    tally.tool('research', [{ id: 'f1', name: 'a.txt' }]);
    tally.modelStep(step({ reply: 'x' }));
    expect(tally.stopRecord(input, 1, 'requires_tool_outputs')).toEqual({
      ...request,
      plan: 'pro',
      stop: 1,
      status: 'requires_tool_outputs',
      capabilitiesUsed: ['chat', 'research'],
      surcharges: DEFAULT_CAPABILITY_SURCHARGES,
      inputTokens: 6,
      outputTokens: 4,
    });
    const first = tally.nextStop(
      initialStop(request),
      'requires_tool_outputs',
      { toolCalls: [] },
      { creditsThisRequest: 3, creditsRemaining: 97 },
    );
    expect(first).toMatchObject({
      stop: 1,
      status: 'requires_tool_outputs',
      tokensUsed: 10,
      creditsThisRequest: 3,
      capabilitiesUsed: ['chat', 'research'],
      files: [{ id: 'f1', name: 'a.txt' }],
    });
    // The next leg starts from zero tokens; what the run used stays.
    expect(tally.stopRecord(input, 2, 'failed', { code: 'compute_error', message: 'x' })).toMatchObject({
      inputTokens: 0,
      outputTokens: 0,
      capabilitiesUsed: ['chat', 'research'],
      errorCode: 'compute_error',
    });
  });

  it('ends a stream with done when completed, error when failed or expired, and not at a pause', () => {
    const base = initialStop(request);
    expect(
      endEvents({ ...base, status: 'completed', stop: 1, creditsThisRequest: 1, creditsRemaining: 9, tokensUsed: 5 }),
    ).toEqual([
      {
        type: 'done',
        data: {
          id: 'r1',
          status: 'completed',
          usage: { credits_this_request: 1, credits_remaining: 9, tokens_used: 5 },
        },
      },
    ]);
    expect(endEvents({ ...base, status: 'expired', stop: 2 })).toEqual([
      { type: 'error', data: { code: 'context_expired', message: 'The request expired.' } },
    ]);
    expect(endEvents({ ...base, status: 'failed', stop: 1, error: { code: 'compute_error', message: 'bad' } })).toEqual(
      [{ type: 'error', data: { code: 'compute_error', message: 'bad' } }],
    );
    expect(endEvents({ ...base, status: 'requires_tool_outputs', stop: 1 })).toEqual([]);
  });
});

describe('tool outputs', () => {
  const paused = {
    ...initialStop(request),
    status: 'requires_tool_outputs' as const,
    stop: 1,
    toolCalls: [
      { id: 'c1', name: 'lookup', arguments: {} },
      { id: 'c2', name: 'lookup', arguments: {} },
    ],
  };
  const submit = (...ids: string[]) => ({
    projectId: 'p1',
    outputs: ids.map((toolCallId) => ({ toolCallId, output: 'x' })),
  });

  it('accepts exactly the pending calls of a request that waits', () => {
    expect(toolOutputsRefusal(paused, true, submit('c2', 'c1'))).toBeUndefined();
  });

  it('refuses another project, a request that does not wait, and outputs already given as context_expired', () => {
    expect(toolOutputsRefusal(paused, true, { ...submit('c1', 'c2'), projectId: 'p2' })?.type).toBe('context_expired');
    expect(toolOutputsRefusal({ ...paused, status: 'completed' }, true, submit('c1', 'c2'))?.type).toBe(
      'context_expired',
    );
    expect(toolOutputsRefusal(paused, false, submit('c1', 'c2'))?.type).toBe('context_expired');
  });

  it('names unknown, missing and duplicated ids', () => {
    expect(toolOutputsRefusal(paused, true, submit('c1', 'c1', 'c9'))).toEqual({
      type: 'invalid_tool_outputs',
      message:
        'tool_outputs must answer exactly the pending tool calls (unknown tool_call_id: c9; missing outputs for: c2; duplicated tool_call_id: c1).',
    });
  });
});

describe('toAgentError', () => {
  const activityFailure = (cause: Error) =>
    new ActivityFailure('failed', 'callModel', '1', RetryState.NON_RETRYABLE_FAILURE, 'worker', cause);

  it('keeps the contract codes of a model that refused, and makes anything else compute_unavailable', () => {
    expect(
      toAgentError(activityFailure(ApplicationFailure.create({ type: 'compute_error', message: 'bad request' }))),
    ).toEqual({ code: 'compute_error', message: 'bad request' });
    expect(
      toAgentError(activityFailure(ApplicationFailure.create({ type: 'service_unavailable', message: 'no model' }))),
    ).toEqual({ code: 'service_unavailable', message: 'no model' });
    expect(
      toAgentError(activityFailure(ApplicationFailure.create({ type: 'model_unavailable', message: '503' }))),
    ).toEqual({ code: 'compute_unavailable', message: 'The language model could not be reached: 503' });
    expect(toAgentError(new Error('?'))).toEqual({
      code: 'compute_unavailable',
      message: 'The language model could not be reached.',
    });
  });
});
