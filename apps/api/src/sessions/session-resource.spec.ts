import { ServiceError } from '#libs/contracts';
import { renderRecord, renderView } from '#libs/resources';
import { parseListParams } from './session-resource.js';

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof ServiceError) return e.code;
    throw e;
  }
  return 'ok';
}

describe('parseListParams', () => {
  const id = '6f1c1a52-3f7e-4a8e-9a55-0d3c2b1e4f10';

  it('defaults to 20 newest sessions of any status', () => {
    expect(parseListParams({})).toEqual({ limit: 20 });
  });

  it('reads limit, the cursor as `after` or `cursor`, and status', () => {
    expect(parseListParams({ limit: '100', after: id, status: 'ended' })).toEqual({
      limit: 100,
      after: id,
      status: 'ended',
    });
    expect(parseListParams({ cursor: id })).toEqual({ limit: 20, after: id });
    expect(parseListParams({ cursor: id, after: id })).toEqual({ limit: 20, after: id });
  });

  it('refuses malformed parameters with invalid_body', () => {
    for (const query of [
      { limit: '0' },
      { limit: '101' },
      { limit: '2.5' },
      { limit: ['1', '2'] },
      { after: 'x' },
      { after: id, cursor: id.replace('6', '7') },
      { status: 'paused' },
    ]) {
      expect(codeOf(() => parseListParams(query))).toBe('invalid_body');
    }
  });
});

describe('session resource', () => {
  it('renders times as unix seconds from the read model and from the workflow', () => {
    const at = (iso: string) => new Date(iso);
    const record = {
      id: 'a',
      projectId: 'p',
      status: 'active' as const,
      messageCount: 2,
      createdAt: at('2026-01-01T00:00:00.900Z'),
      lastActivityAt: at('2026-01-01T00:10:00Z'),
      expiresAt: at('2026-01-01T00:40:00Z'),
    };
    expect(renderRecord(record)).toEqual({
      id: 'a',
      object: 'session',
      status: 'active',
      created_at: 1767225600,
      last_activity_at: 1767226200,
      expires_at: 1767228000,
      message_count: 2,
    });
    const view = {
      sessionId: 'a',
      projectId: 'p',
      status: 'ended' as const,
      createdAt: 1767225600900,
      lastActivityAt: 1767226200000,
      expiresAt: 1767226300000,
      messageCount: 2,
      revision: 3,
      queuedMessages: 0,
    };
    expect(renderView(view)).toEqual({
      id: 'a',
      object: 'session',
      status: 'ended',
      created_at: 1767225600,
      last_activity_at: 1767226200,
      expires_at: 1767226300,
      message_count: 2,
    });
  });
});
