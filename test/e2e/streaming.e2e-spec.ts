import { startApi } from '../support/api.js';
import { e2eStack } from '../support/e2e-stack.js';
import { request } from '../support/http.js';
import { readSse } from '../support/sse.js';

const longMessage = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');

describe('streaming (SSE)', () => {
  const stack = e2eStack({ name: 'streaming' });

  async function finished(url: string, id: string, auth: Record<string, string>) {
    for (let i = 0; i < 100; i++) {
      const res = await request(url, 'GET', `/v1/agent/${id}`, { headers: auth });
      if (res.body.status !== 'in_progress') return res.body;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('request did not finish');
  }

  it('streams tokens, then done with usage; the tokens are the final message', async () => {
    const { auth } = await stack.fixtures.project({ credits: 20 });
    const res = await readSse(`${stack.api.url}/v1/agent`, {
      method: 'POST',
      headers: auth,
      body: { message: longMessage, stream: true, capabilities: ['chat'] },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const id = res.headers.get('x-request-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers.get('x-ratelimit-limit')).toBe('50000');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('49999');

    const tokens = res.events.filter((e) => e.event === 'token');
    expect(tokens.length).toBeGreaterThan(10);
    expect(res.events.map((e) => e.id)).toEqual(res.events.map((_, i) => String(i + 1)));
    const done = res.events.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data).toEqual({
      type: 'done',
      id,
      status: 'completed',
      usage: { credits_this_request: 1, credits_remaining: 19, tokens_used: expect.any(Number) },
    });
    expect(done.data.usage.tokens_used).toBeGreaterThan(0);
    expect(tokens.every((t) => t.data.type === 'token' && typeof t.data.content === 'string')).toBe(true);
    const final = await finished(stack.api.url, id, auth);
    expect(tokens.map((t) => t.data.content).join('')).toBe(final.message);
  });

  it('reports built-in tools with tool_start and tool_end', async () => {
    const { auth } = await stack.fixtures.project();
    const res = await readSse(`${stack.api.url}/v1/agent`, {
      method: 'POST',
      headers: auth,
      body: { message: 'run_javascript {"code":"2+2"}', stream: true, capabilities: ['code'] },
    });
    const types = res.events.map((e) => e.event);
    expect(types.indexOf('tool_start')).toBeLessThan(types.indexOf('tool_end'));
    expect(res.events.find((e) => e.event === 'tool_start')!.data).toEqual({
      type: 'tool_start',
      tool: 'run_javascript',
      call_id: expect.any(String),
    });
    expect(res.events.find((e) => e.event === 'tool_end')!.data).toEqual({
      type: 'tool_end',
      tool: 'run_javascript',
      call_id: expect.any(String),
      status: 'ok',
      duration_ms: expect.any(Number),
    });
    expect(types.at(-1)).toBe('done');
    expect(
      res.events
        .filter((e) => e.event === 'token')
        .map((e) => e.data.content)
        .join(''),
    ).toContain('4');
  });

  it('ends with one error event when the model fails in the middle of the stream', async () => {
    const { auth } = await stack.fixtures.project({
      credits: 10,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-stream' },
    });
    const failing = { content: 'one two three four five six seven eight', failAfterEvents: 3 };
    stack.models.reply(failing, failing, failing, failing);
    const res = await readSse(`${stack.api.url}/v1/agent`, {
      method: 'POST',
      headers: auth,
      body: { message: 'hi', stream: true },
    });
    expect(res.status).toBe(200);
    const last = res.events.at(-1)!;
    expect(last.event).toBe('error');
    expect(last.data).toEqual({
      type: 'error',
      code: 'compute_unavailable',
      message: expect.any(String),
      docs: `${stack.config.publicBaseUrl}/docs/errors#compute_unavailable`,
    });
    expect(res.events.filter((e) => e.event === 'error')).toHaveLength(1);
    expect(res.events.filter((e) => e.event === 'token').length).toBeGreaterThan(0);
  });

  it('resumes a dropped connection on another api replica with exactly the missing events', async () => {
    const { auth } = await stack.fixtures.project();
    const first = await readSse(
      `${stack.api.url}/v1/agent`,
      { method: 'POST', headers: auth, body: { message: longMessage, stream: true, capabilities: ['chat'] } },
      3,
    );
    const id = first.headers.get('x-request-id')!;
    expect(first.events.map((e) => e.id)).toEqual(['1', '2', '3']);
    await finished(stack.api.url, id, auth); // the run went on without the client
    const replica = await startApi(stack.env);
    try {
      const rest = await readSse(`${replica.url}/v1/agent/${id}/events`, {
        headers: { ...auth, 'last-event-id': '3' },
      });
      expect(rest.status).toBe(200);
      const ids = rest.events.map((e) => Number(e.id));
      expect(ids[0]).toBe(4);
      expect(ids).toEqual(ids.map((_, i) => 4 + i));
      expect(rest.events.at(-1)!.event).toBe('done');
      const all = [...first.events, ...rest.events]
        .filter((e) => e.event === 'token')
        .map((e) => e.data.content)
        .join('');
      expect(all).toBe((await finished(stack.api.url, id, auth)).message);
      const byQuery = await readSse(`${replica.url}/v1/agent/${id}/events?after=${ids.at(-2)}`, { headers: auth });
      expect(byQuery.events.map((e) => e.event)).toEqual(['done']);
      const other = await stack.fixtures.project();
      const denied = await request(replica.url, 'GET', `/v1/agent/${id}/events`, { headers: other.auth });
      expect(denied.status).toBe(404);
      expect(denied.body.error.code).toBe('request_not_found');
    } finally {
      await replica.close();
    }
  });
});
