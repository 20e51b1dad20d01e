import { EVENT_TYPES } from '#libs/contracts';
import type { DomainEvent } from './domain-event.js';
import { evolveSession, type SessionState } from './session-state.js';

const event = (type: string, version: number, data: Record<string, unknown> = {}): DomainEvent => ({
  id: `e${version}`,
  type,
  streamId: 'session-s1',
  version,
  projectId: 'p1',
  time: '2026-11-25T11:00:00.000Z',
  data: { sessionId: 's1', ...data },
});
const created = event(EVENT_TYPES.sessionCreated, 1, {
  createdAt: '2026-11-25T10:00:00.000Z',
  expiresAt: '2026-11-25T10:30:00.000Z',
});
const answered = (version: number, revision: number, messageCount: number): DomainEvent =>
  event(EVENT_TYPES.sessionMessageAnswered, version, {
    status: 'active',
    createdAt: '2026-11-25T10:00:00.000Z',
    lastActivityAt: `2026-11-25T10:0${revision}:00.000Z`,
    expiresAt: `2026-11-25T10:3${revision}:00.000Z`,
    messageCount,
    revision,
  });
const fold = (events: readonly DomainEvent[], from?: SessionState): SessionState | undefined =>
  events.reduce(evolveSession, from);

describe('evolveSession', () => {
  it('starts active at its creation and takes the state a state event carries', () => {
    expect(fold([created])).toEqual({
      sessionId: 's1',
      projectId: 'p1',
      status: 'active',
      createdAt: '2026-11-25T10:00:00.000Z',
      lastActivityAt: '2026-11-25T10:00:00.000Z',
      expiresAt: '2026-11-25T10:30:00.000Z',
      messageCount: 0,
      revision: 0,
      version: 1,
    });
    expect(fold([created, answered(2, 1, 2)])).toMatchObject({
      status: 'active',
      lastActivityAt: '2026-11-25T10:01:00.000Z',
      expiresAt: '2026-11-25T10:31:00.000Z',
      messageCount: 2,
      revision: 1,
      version: 2,
    });
  });

  it('moves its version but not its times on an accepted or paused message', () => {
    const state = fold([
      created,
      event(EVENT_TYPES.sessionMessageAccepted, 2, { requestId: 'r1' }),
      event(EVENT_TYPES.sessionMessagePaused, 3, { requestId: 'r1' }),
    ]);
    expect(state).toEqual({ ...fold([created]), version: 3 });
    expect(evolveSession(undefined, event(EVENT_TYPES.sessionMessageAccepted, 1, { requestId: 'r1' }))).toBeUndefined();
  });

  it('keeps a newer revision over an older state event recorded after it', () => {
    const state = fold([created, answered(2, 3, 6), answered(3, 2, 4)]);
    expect(state).toMatchObject({ messageCount: 6, revision: 3, version: 3 });
  });

  it('keeps a state event that came before its creation (a creation that lost the race)', () => {
    const state = fold([answered(1, 1, 2), { ...created, version: 2 }]);
    expect(state).toMatchObject({ status: 'active', messageCount: 2, revision: 1, version: 2 });
  });

  it("keeps what it had for a reconciler's event without the whole state, and takes its status when it has one", () => {
    const before = fold([created, answered(2, 1, 2)])!;
    const reconciled = fold([event(EVENT_TYPES.sessionReconciled, 3, { status: 'expired' })], before);
    expect(reconciled).toMatchObject({
      status: 'expired',
      createdAt: before.createdAt,
      lastActivityAt: before.lastActivityAt,
      messageCount: 2,
      revision: 1,
      expiresAt: '2026-11-25T11:00:00.000Z',
      version: 3,
    });
    expect(fold([event(EVENT_TYPES.sessionReconciled, 3, {})], before)).toEqual({ ...before, version: 3 });
  });

  it('changes nothing for an event at or below its version, or of another stream', () => {
    const state = fold([created, answered(2, 1, 2)]);
    expect(fold([answered(2, 5, 10), created], state)).toBe(state);
    expect(evolveSession(state, event(EVENT_TYPES.agentRequestCompleted, 9))).toBe(state);
  });

  it('ends with an ended event', () => {
    const ended = event(EVENT_TYPES.sessionEnded, 3, {
      status: 'ended',
      createdAt: '2026-11-25T10:00:00.000Z',
      lastActivityAt: '2026-11-25T10:05:00.000Z',
      expiresAt: '2026-11-25T10:05:00.000Z',
      messageCount: 2,
      revision: 2,
    });
    expect(fold([created, answered(2, 1, 2), ended])).toMatchObject({
      status: 'ended',
      expiresAt: '2026-11-25T10:05:00.000Z',
      revision: 2,
      version: 3,
    });
  });
});
