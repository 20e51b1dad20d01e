import { initialStop, type AgentStop, type SessionMessage, type SessionWorkflowInput } from '#libs/contracts';
import { CONTINUE_AS_NEW_AFTER_BYTES, CONTINUE_AS_NEW_AFTER_EVENTS, SessionLoop } from './session-loop.js';

const input: SessionWorkflowInput = { sessionId: 's1', projectId: 'p1', createdAt: 1_000, idleTimeoutMs: 60_000 };
// Only the fields the session reads; the rest of a request travels to the child untouched.
const message = (requestId: string, patch: Partial<SessionMessage> = {}): SessionMessage =>
  ({
    requestId,
    projectId: 'p1',
    acceptBy: 10_000,
    capabilities: ['chat'],
    message: { text: 'hi' },
    ...patch,
  }) as unknown as SessionMessage;
const stop = (requestId: string, status: AgentStop['status']): AgentStop => ({
  ...initialStop({ requestId, projectId: 'p1' }),
  status,
  stop: 1,
});
/** A message accepted and taken up, as the workflow's loop does. */
const taken = (session: SessionLoop, requestId: string, now = 0) => {
  session.accept(message(requestId), now);
  return session.next()!;
};
const quiet = { continueAsNewSuggested: false, historyLength: 10, historySize: 1_000 };

describe('the session loop', () => {
  it('starts active at the workflow clock, or where the previous run left off', () => {
    expect(new SessionLoop(input, 5_000).view()).toEqual({
      sessionId: 's1',
      projectId: 'p1',
      status: 'active',
      createdAt: 1_000,
      lastActivityAt: 5_000,
      expiresAt: 65_000,
      messageCount: 0,
      revision: 0,
      queuedMessages: 0,
    });
    const carried = new SessionLoop(
      { ...input, carried: { messageCount: 6, lastActivityAt: 7_000, revision: 4 } },
      9_000,
    );
    expect(carried.view()).toMatchObject({ lastActivityAt: 7_000, expiresAt: 67_000, messageCount: 6, revision: 4 });
  });

  it('counts a revision per record', () => {
    const session = new SessionLoop(input, 0);
    expect(session.nextRecord().revision).toBe(1);
    expect(session.nextRecord().revision).toBe(2);
    expect(session.view().revision).toBe(2);
  });

  it("refuses another project's message as not found, and a message to an expired or ended session", () => {
    const session = new SessionLoop(input, 0);
    expect(session.messageRefusal(message('r1', { projectId: 'p2' }), 0)?.type).toBe('session_not_found');
    session.expire();
    expect(session.messageRefusal(message('r1'), 0)?.type).toBe('session_expired');
    const ended = new SessionLoop(input, 0);
    ended.end(5);
    expect(ended.refusal('p1')?.type).toBe('session_ended');
    expect(ended.view()).toMatchObject({ status: 'ended', expiresAt: 5 });
  });

  it('refuses a message the api stopped waiting for', () => {
    expect(new SessionLoop(input, 0).messageRefusal(message('r1', { acceptBy: 100 }), 101)?.type).toBe(
      'compute_unavailable',
    );
    expect(new SessionLoop(input, 0).messageRefusal(message('r1', { acceptBy: 100 }), 100)).toBeUndefined();
  });

  it('is busy from acceptance until the request tells its last stop, and a pause answers the message', () => {
    const session = new SessionLoop(input, 0);
    const entry = session.accept(message('r1'), 50);
    expect(session.view()).toMatchObject({ lastActivityAt: 50, queuedMessages: 1 });
    expect(session.messageRefusal(message('r2'), 60)).toMatchObject({
      type: 'session_busy',
      message: expect.stringContaining('request r1'),
    });
    session.begin(session.next()!);
    expect(session.view()).toMatchObject({ activeRequestId: 'r1', queuedMessages: 0 });
    expect(session.messageRefusal(message('r2'), 60)?.type).toBe('session_busy');

    session.requestStopped(stop('other', 'completed'), 70);
    expect(session.view().lastActivityAt).toBe(50);
    const paused = stop('r1', 'requires_tool_outputs');
    session.requestStopped(paused, 80);
    expect(entry.reply).toEqual({ stop: paused });
    expect(session.messageRefusal(message('r2'), 80)?.type).toBe('session_busy');

    session.requestStopped(stop('r1', 'completed'), 90);
    expect(entry.requestEnded).toBe(true);
    expect(entry.reply).toEqual({ stop: paused });
    expect(session.messageRefusal(message('r2'), 90)).toBeUndefined();
    expect(session.view().lastActivityAt).toBe(90);
  });

  it('gives the child the last 49 messages of the conversation and the session id (before the patch)', () => {
    const session = new SessionLoop({ ...input, carried: { messageCount: 60, lastActivityAt: 0, revision: 0 } }, 0);
    const run = session.begin(taken(session, 'r1'));
    expect(run.history).toEqual({ id: 's1', from: 11, to: 60 });
    expect(run.childInput).toMatchObject({ requestId: 'r1', sessionId: 's1', history: run.history });
    expect(run.childInput).not.toHaveProperty('acceptBy');
    expect(new SessionLoop(input, 0).begin({ message: message('r2') }).history).toEqual({ id: 's1', from: 0, to: 0 });
  });

  // Issue 28: the window began at message 11 of 60, an assistant message, and a provider such as
  // Anthropic refuses a conversation whose first message is not the user's ("messages: first message
  // must use the \"user\" role"): every message of a session past 25 exchanges failed there.
  it('starts the window the model gets at a user message (49 messages then, the new one included)', () => {
    for (const messageCount of [0, 2, 46, 48, 50, 60, 62, 1000]) {
      const session = new SessionLoop({ ...input, carried: { messageCount, lastActivityAt: 0, revision: 0 } }, 0);
      const { history } = session.begin(taken(session, 'r1'), { windowStartsWithUser: true });
      expect(history.from % 2).toBe(0);
      expect(history.to).toBe(messageCount);
      expect(history.to - history.from + 1).toBeLessThanOrEqual(50);
      expect(history.to - history.from + 1).toBeGreaterThanOrEqual(Math.min(messageCount + 1, 49));
    }
  });

  it('folds only a completed exchange into the conversation', () => {
    const session = new SessionLoop({ ...input, carried: { messageCount: 4, lastActivityAt: 0, revision: 0 } }, 0);
    const run = session.begin(taken(session, 'r1'));
    expect(session.exchangeOf(run, stop('r1', 'failed'))).toBeUndefined();
    expect(session.exchangeOf(run, stop('r1', 'expired'))).toBeUndefined();
    const exchange = session.exchangeOf(run, stop('r1', 'completed'));
    expect(exchange).toEqual({ projectId: 'p1', sessionId: 's1', at: 4, requestId: 'r1', userSeq: 4, keep: 50 });
    session.answered(true, 500);
    expect(session.view()).toMatchObject({ messageCount: 6, lastActivityAt: 500, queuedMessages: 0 });
    expect(session.view()).not.toHaveProperty('activeRequestId');
    session.begin(taken(session, 'r2', 600));
    session.answered(false, 700);
    expect(session.view()).toMatchObject({ messageCount: 6, lastActivityAt: 700 });
  });

  it('fails a message whose request could not be run, charging nothing', () => {
    const session = new SessionLoop(input, 0);
    const failed = session.failedToRun(session.begin(taken(session, 'r1')));
    expect(failed).toMatchObject({
      requestId: 'r1',
      status: 'failed',
      sessionId: 's1',
      error: { code: 'compute_error' },
      creditsThisRequest: 0,
    });
  });

  it('answers a queued message with session_ended when the session ends', () => {
    const session = new SessionLoop(input, 0);
    const queued = session.accept(message('r1'), 0);
    session.end(10);
    expect(queued.reply).toEqual({ error: { type: 'session_ended', message: expect.any(String) } });
    expect(session.queue).toHaveLength(0);
    expect(session.hasWork()).toBe(true);
    expect(session.idle()).toBe(false);
  });

  it('expires after the idle timeout from the last activity', () => {
    const session = new SessionLoop(input, 1_000);
    expect(session.idleLeft(1_000)).toBe(60_000);
    expect(session.idleLeft(61_000)).toBe(0);
    expect(session.idle()).toBe(true);
    session.accept(message('r1'), 2_000);
    expect(session.hasWork()).toBe(true);
    expect(session.idle()).toBe(false);
  });

  it('hands over when the server suggests it or the history passes its bounds, carrying its state', () => {
    const session = new SessionLoop(input, 0);
    expect(session.continueAsNewDue(quiet)).toBe(false);
    expect(session.continueAsNewDue({ ...quiet, continueAsNewSuggested: true })).toBe(true);
    expect(session.continueAsNewDue({ ...quiet, historyLength: CONTINUE_AS_NEW_AFTER_EVENTS })).toBe(true);
    expect(session.continueAsNewDue({ ...quiet, historySize: CONTINUE_AS_NEW_AFTER_BYTES })).toBe(true);
    expect(new SessionLoop({ ...input, continueAsNewAfterEvents: 10 }, 0).continueAsNewDue(quiet)).toBe(true);
    expect(new SessionLoop({ ...input, continueAsNewAfterBytes: 1_000 }, 0).continueAsNewDue(quiet)).toBe(true);
    session.nextRecord();
    expect(session.carriedInput()).toEqual({ ...input, carried: { messageCount: 0, lastActivityAt: 0, revision: 1 } });
  });
});
