import { EVENT_TYPES, type AgentRequestStopData } from '#libs/contracts';
import type { DomainEvent } from './domain-event.js';
import { evolveRequest, type RequestState } from './request-state.js';

let version = 0;
const event = (type: string, data: Record<string, unknown>, at = version + 1): DomainEvent => {
  version = at;
  return {
    id: `e${at}`,
    type,
    streamId: 'agent-request-r1',
    version: at,
    projectId: 'p1',
    time: `2026-11-25T10:00:0${at}.000Z`,
    data: { requestId: 'r1', ...data },
  };
};
const stopEvent = (type: string, data: Partial<AgentRequestStopData>): DomainEvent =>
  event(type, {
    status: 'completed',
    stop: 1,
    capabilitiesUsed: [],
    creditsCharged: 0,
    inputTokens: 0,
    outputTokens: 0,
    ...data,
  });
const fold = (events: readonly DomainEvent[], from?: RequestState): RequestState | undefined =>
  events.reduce(evolveRequest, from);

describe('evolveRequest', () => {
  beforeEach(() => (version = 0));

  it('folds acceptance, a pause, tool outputs and completion: totals over the request, figures of the last leg', () => {
    const state = fold([
      event(EVENT_TYPES.agentRequestAccepted, { creditsReserved: 6, requestsUsed: 3, creditsRemaining: 94 }),
      stopEvent(EVENT_TYPES.agentRequestToolCallsRequested, {
        status: 'requires_tool_outputs',
        stop: 1,
        capabilitiesUsed: ['chat'],
        creditsCharged: 2,
        creditsRemaining: 98,
        inputTokens: 10,
        outputTokens: 5,
      }),
      event(EVENT_TYPES.agentRequestToolOutputsSubmitted, { stop: 1, toolCallIds: ['c1'] }),
      stopEvent(EVENT_TYPES.agentRequestCompleted, {
        status: 'completed',
        stop: 2,
        capabilitiesUsed: ['chat', 'research'],
        creditsCharged: 0,
        inputTokens: 20,
        outputTokens: 7,
      }),
    ]);
    expect(state).toEqual({
      requestId: 'r1',
      projectId: 'p1',
      sessionId: null,
      status: 'completed',
      stop: 2,
      capabilitiesUsed: ['chat', 'research'],
      credits: 2,
      legCredits: 0,
      tokens: 42,
      legTokens: 27,
      creditsRemaining: 98,
      requestsUsed: 3,
      errorCode: null,
      createdAt: '2026-11-25T10:00:01.000Z',
      updatedAt: '2026-11-25T10:00:04.000Z',
      version: 4,
    });
  });

  it('is in progress again once tool outputs are submitted', () => {
    const state = fold([
      event(EVENT_TYPES.agentRequestAccepted, { creditsReserved: 6, requestsUsed: 1 }),
      stopEvent(EVENT_TYPES.agentRequestToolCallsRequested, { status: 'requires_tool_outputs', stop: 1 }),
      event(EVENT_TYPES.agentRequestToolOutputsSubmitted, { stop: 1, toolCallIds: ['c1'] }),
    ]);
    expect(state).toMatchObject({ status: 'in_progress', stop: 1, version: 3 });
  });

  it('keeps the session and the error code a stop carries, and the balance when a stop has none', () => {
    const state = fold([
      event(EVENT_TYPES.agentRequestAccepted, { creditsReserved: 6, requestsUsed: 1, creditsRemaining: 50 }),
      stopEvent(EVENT_TYPES.agentRequestFailed, {
        status: 'failed',
        stop: 1,
        sessionId: 's1',
        errorCode: 'model_error',
      }),
    ]);
    expect(state).toMatchObject({ status: 'failed', sessionId: 's1', errorCode: 'model_error', creditsRemaining: 50 });
  });

  it('changes nothing for an event at or below its version (a redelivery, an overlapping catch-up)', () => {
    const accepted = event(EVENT_TYPES.agentRequestAccepted, { creditsReserved: 6, requestsUsed: 1 });
    const completed = stopEvent(EVENT_TYPES.agentRequestCompleted, {
      creditsCharged: 3,
      inputTokens: 4,
      outputTokens: 4,
    });
    const once = fold([accepted, completed])!;
    expect(once).toMatchObject({ credits: 3, tokens: 8, version: 2 });
    expect(evolveRequest(once, completed)).toBe(once);
    expect(evolveRequest(once, accepted)).toBe(once);
  });

  it('passes over events of other streams and starts from the first event it sees', () => {
    expect(evolveRequest(undefined, event(EVENT_TYPES.sessionCreated, { sessionId: 's1' }, 1))).toBeUndefined();
    version = 0;
    const state = fold([stopEvent(EVENT_TYPES.agentRequestCompleted, { creditsCharged: 1 })]);
    expect(state).toMatchObject({
      requestId: 'r1',
      status: 'completed',
      createdAt: '2026-11-25T10:00:01.000Z',
      credits: 1,
      requestsUsed: 0,
    });
    expect(evolveRequest(state, event(EVENT_TYPES.sessionEnded, { sessionId: 's1' }))).toBe(state);
  });
});
