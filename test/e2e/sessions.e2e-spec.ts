import { randomUUID } from 'node:crypto';
import type { ErrorCode } from '#libs/contracts';
import { startApi, type RunningApi } from '../support/api.js';
import { testConfig } from '../support/config.js';
import { e2eStack } from '../support/e2e-stack.js';
import { request, type JsonResponse } from '../support/http.js';
import { readSse } from '../support/sse.js';

// Sessions over HTTP: a real api and worker in this process on their own task queue, the real
// Temporal and PostgreSQL, and the scripted model (or a scripted model server for what the model saw).
const config = testConfig();
/** An api replica on the same task queue whose sessions expire after 2 seconds. */
const SHORT_IDLE_MS = 2000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

function expectError(res: JsonResponse, status: number, code: ErrorCode): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(Object.keys(res.body.error).sort()).toEqual(['code', 'docs', 'message']);
  expect(res.body.error.docs).toBe(`${config.publicBaseUrl}/docs/errors#${code}`);
}

describe('/v1/sessions', () => {
  const stack = e2eStack({ name: 'sessions' });
  let replica: RunningApi;
  let shortApi: RunningApi;

  beforeAll(async () => {
    replica = await startApi(stack.env);
    shortApi = await startApi({ ...stack.env, SESSION_IDLE_TIMEOUT_MS: String(SHORT_IDLE_MS) });
  });
  afterAll(async () => {
    await shortApi?.close();
    await replica?.close();
  });

  const call = (method: string, path: string, auth: Record<string, string>, body?: unknown, base = stack.api) =>
    request(base.url, method, path, { headers: auth, body });
  const create = (auth: Record<string, string>, base = stack.api) =>
    call('POST', '/v1/sessions', auth, undefined, base);
  const send = (auth: Record<string, string>, id: string, body: unknown) =>
    call('POST', `/v1/sessions/${id}/messages`, auth, body);

  it('creates an active session with the resource fields and the headers of every 200', async () => {
    const { auth } = await stack.fixtures.project({ credits: 10 });
    const before = Math.floor(Date.now() / 1000);
    const res = await create(auth);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      object: 'session',
      status: 'active',
      created_at: expect.any(Number),
      last_activity_at: res.body.created_at,
      expires_at: res.body.created_at + 1800,
      message_count: 0,
    });
    expect(res.body.created_at).toBeGreaterThanOrEqual(before);
    expect(res.body.created_at).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    expect(res.headers.get('x-request-id')).toMatch(UUID);
    expect(res.headers.get('x-ratelimit-limit')).toBe('50000');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('50000');

    const read = await call('GET', `/v1/sessions/${res.body.id}`, auth);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
  });

  it('gives the model the conversation so far, and answers in the session message shape', async () => {
    const { auth, project } = await stack.fixtures.project({
      credits: 10,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-session-model' },
    });
    const session = (await create(auth)).body;
    const first = await send(auth, session.id, { message: 'My name is Ada.' });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      id: expect.stringMatching(UUID),
      object: 'session.message',
      session_id: session.id,
      status: 'completed',
      message: 'You said: "My name is Ada."',
      capabilities_used: ['chat'],
      files: [],
      usage: { credits_this_request: 1, credits_remaining: 9, tokens_used: expect.any(Number) },
      meta: { duration_ms: expect.any(Number), project_id: project.id, plan: 'pro' },
      _compute_instance: `default/${stack.env.TEMPORAL_TASK_QUEUE}`,
    });
    expect(first.body.id).not.toBe(session.id);
    expect(first.headers.get('x-request-id')).toBe(first.body.id);
    expect(first.headers.get('x-ratelimit-remaining')).toBe('49999');

    stack.models.reply({ content: 'Your name is Ada.' });
    const second = await send(auth, session.id, { message: 'What is my name?' });
    expect(second.body).toMatchObject({
      object: 'session.message',
      session_id: session.id,
      status: 'completed',
      message: 'Your name is Ada.',
      usage: { credits_remaining: 8 },
    });
    expect(second.body.id).not.toBe(first.body.id);
    expect(second.headers.get('x-ratelimit-remaining')).toBe('49998');
    const seen = stack.models.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)!.body.messages;
    expect(seen).toEqual([
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: 'You said: "My name is Ada."' },
      { role: 'user', content: 'What is my name?' },
    ]);

    const read = await call('GET', `/v1/sessions/${session.id}`, auth);
    expect(read.body).toMatchObject({ status: 'active', message_count: 4 });
    expect(read.body.expires_at).toBe(read.body.last_activity_at + 1800);
    expect(read.body.last_activity_at).toBeGreaterThanOrEqual(session.last_activity_at);
  });

  it('validates a message like an agent request', async () => {
    const { auth } = await stack.fixtures.project({ credits: 10 });
    const session = (await create(auth)).body;
    expectError(await send(auth, session.id, {}), 400, 'missing_message');
    expectError(await send(auth, session.id, '{"message":'), 400, 'invalid_body');
    expectError(
      await send(auth, session.id, { message: 'hi', capabilities: ['telepathy'] }),
      400,
      'invalid_capabilities',
    );
    expectError(
      await send(auth, session.id, { message: 'hi', tools: [weatherTool], stream: true }),
      400,
      'stream_not_supported',
    );
    expect((await call('GET', `/v1/sessions/${session.id}`, auth)).body.message_count).toBe(0);
  });

  // Issue 28: past 25 exchanges the window of 49 earlier messages began with an assistant message,
  // which Anthropic refuses: every later message of the session failed.
  it('keeps answering a long session on a provider that wants the user first (Anthropic)', async () => {
    const { auth } = await stack.fixtures.project({
      credits: 100,
      model: { provider: 'anthropic', model: 'claude-test', baseUrl: stack.models.origin, apiKey: 'sk-ant-session' },
    });
    const session = (await create(auth)).body;
    for (let i = 1; i <= 27; i++) {
      const res = await send(auth, session.id, { message: `message ${i}` });
      expect({ i, status: res.status, error: res.body.error }).toEqual({ i, status: 200, error: undefined });
    }
    const seen = stack.models.requests.filter((r) => r.path === '/v1/messages').at(-1)!.body.messages;
    expect(seen[0].role).toBe('user');
    expect(seen.at(-1)).toMatchObject({ role: 'user' });
    expect(seen.length).toBe(49);
  });

  it('streams a message like the agent endpoint, and the streamed exchange joins the conversation', async () => {
    const { auth } = await stack.fixtures.project({
      credits: 10,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-session-stream' },
    });
    const session = (await create(auth)).body;
    const res = await readSse(`${stack.api.url}/v1/sessions/${session.id}/messages`, {
      method: 'POST',
      headers: auth,
      body: { message: 'Stream this, please.', stream: true },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const id = res.headers.get('x-request-id')!;
    expect(id).toMatch(UUID);
    expect(res.headers.get('x-ratelimit-remaining')).toBe('49999');
    const tokens = res.events.filter((e) => e.event === 'token').map((e) => e.data.content as string);
    expect(tokens.length).toBeGreaterThan(1);
    expect(tokens.join('')).toBe('You said: "Stream this, please."');
    expect(res.events.at(-1)).toMatchObject({
      event: 'done',
      data: { type: 'done', id, status: 'completed', usage: { credits_this_request: 1, credits_remaining: 9 } },
    });

    stack.models.reply({ content: 'Done.' });
    const next = await send(auth, session.id, { message: 'And now?' });
    expect(next.body).toMatchObject({ object: 'session.message', session_id: session.id, message: 'Done.' });
    const seen = stack.models.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)!.body.messages;
    expect(seen).toEqual([
      { role: 'user', content: 'Stream this, please.' },
      { role: 'assistant', content: 'You said: "Stream this, please."' },
      { role: 'user', content: 'And now?' },
    ]);
  });

  it('refuses sessions to accounts that never purchased credits, and to the free plan, with 403 plan_restricted', async () => {
    const never = await stack.fixtures.project({ credits: 0 });
    expectError(await create(never.auth), 403, 'plan_restricted');
    const free = await stack.fixtures.project({ plan: 'free' });
    expectError(await create(free.auth), 403, 'plan_restricted');
    expect((await call('GET', '/v1/sessions', never.auth)).body.data).toEqual([]);
  });

  it('allows 10 active sessions per project: the 11th gets 429 session_limit_reached until one ends', async () => {
    const { auth } = await stack.fixtures.project();
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await create(auth);
      expect(res.status).toBe(200);
      ids.push(res.body.id);
    }
    expectError(await create(auth), 429, 'session_limit_reached');
    expect((await call('DELETE', `/v1/sessions/${ids[0]}`, auth)).status).toBe(200);
    expect((await create(auth)).status).toBe(200);
    expectError(await create(auth), 429, 'session_limit_reached');
  });

  it('never lets concurrent creations, on two api replicas, exceed 10 active sessions', async () => {
    const { auth } = await stack.fixtures.project();
    const results = await Promise.all(Array.from({ length: 15 }, (_, i) => create(auth, i % 2 ? stack.api : replica)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(10).fill(200), ...Array(5).fill(429)]);
    for (const r of results.filter((x) => x.status === 429)) expect(r.body.error.code).toBe('session_limit_reached');
    const active = await call('GET', '/v1/sessions?status=active&limit=100', auth);
    expect(active.body.data).toHaveLength(10);
  });

  it('ends a session with DELETE: later requests get 410 session_ended, and it still reads', async () => {
    const { auth } = await stack.fixtures.project({ credits: 10 });
    const session = (await create(auth)).body;
    expect((await send(auth, session.id, { message: 'hello' })).status).toBe(200);
    const ended = await call('DELETE', `/v1/sessions/${session.id}`, auth);
    expect(ended.status).toBe(200);
    expect(ended.body).toMatchObject({ id: session.id, object: 'session', status: 'ended', message_count: 2 });
    expect(ended.headers.get('x-request-id')).toMatch(UUID);
    expectError(await send(auth, session.id, { message: 'still there?' }), 410, 'session_ended');
    expectError(await call('DELETE', `/v1/sessions/${session.id}`, auth), 410, 'session_ended');
    expect((await call('GET', `/v1/sessions/${session.id}`, auth)).body).toMatchObject({
      status: 'ended',
      message_count: 2,
    });
  });

  it('replays a message answered before the session ended to a retry with its Idempotency-Key', async () => {
    const { auth } = await stack.fixtures.project({ credits: 10 });
    const session = (await create(auth)).body;
    const keyed = { ...auth, 'idempotency-key': randomUUID() };
    const first = await call('POST', `/v1/sessions/${session.id}/messages`, keyed, { message: 'hello' });
    expect(first.status).toBe(200);
    expect((await call('DELETE', `/v1/sessions/${session.id}`, auth)).status).toBe(200);
    const again = await call('POST', `/v1/sessions/${session.id}/messages`, keyed, { message: 'hello' });
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: first.body });
    // A new key, or the same key with another body, is a new message: the session has ended.
    expectError(await send(auth, session.id, { message: 'hello' }), 410, 'session_ended');
    expectError(
      await call('POST', `/v1/sessions/${session.id}/messages`, keyed, { message: 'something else' }),
      410,
      'session_ended',
    );
  });

  it("answers 404 session_not_found for an unknown id, a malformed one, and another project's session", async () => {
    const mine = await stack.fixtures.project({ credits: 10 });
    const theirs = await stack.fixtures.project({ credits: 10 });
    const foreign = (await create(theirs.auth)).body.id;
    for (const id of [randomUUID(), 'not-a-uuid', foreign]) {
      expectError(await call('GET', `/v1/sessions/${id}`, mine.auth), 404, 'session_not_found');
      expectError(await send(mine.auth, id, { message: 'hi' }), 404, 'session_not_found');
      expectError(await call('DELETE', `/v1/sessions/${id}`, mine.auth), 404, 'session_not_found');
    }
    // The other project's session is untouched.
    expect((await call('GET', `/v1/sessions/${foreign}`, theirs.auth)).body.status).toBe('active');
  });

  it("lists this project's sessions newest first, with cursor paging and a status filter", async () => {
    const { auth } = await stack.fixtures.project();
    const other = await stack.fixtures.project();
    await create(other.auth);
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await create(auth)).body.id);
    for (const id of [created[1], created[3]])
      expect((await call('DELETE', `/v1/sessions/${id}`, auth)).status).toBe(200);
    const newestFirst = [...created].reverse();

    const seen: string[] = [];
    let page = await call('GET', '/v1/sessions?limit=2', auth);
    for (;;) {
      expect(page.status).toBe(200);
      expect(page.body).toMatchObject({ object: 'list', has_more: expect.any(Boolean) });
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.data.map((s: { id: string }) => s.id));
      if (!page.body.has_more) {
        expect(page.body.next_cursor).toBeNull();
        break;
      }
      expect(page.body.next_cursor).toBe(page.body.data.at(-1).id);
      page = await call('GET', `/v1/sessions?limit=2&after=${page.body.next_cursor}`, auth);
    }
    expect(seen).toEqual(newestFirst);
    const viaCursor = await call('GET', `/v1/sessions?limit=10&cursor=${created[3]}`, auth);
    expect(viaCursor.body.data.map((s: { id: string }) => s.id)).toEqual([created[2], created[1], created[0]]);

    const ended = await call('GET', '/v1/sessions?status=ended', auth);
    expect(ended.body).toEqual({
      object: 'list',
      data: [
        expect.objectContaining({ id: created[3], status: 'ended' }),
        expect.objectContaining({ id: created[1], status: 'ended' }),
      ],
      has_more: false,
      next_cursor: null,
    });
    const active = await call('GET', '/v1/sessions?status=active', auth);
    expect(active.body.data.map((s: { id: string }) => s.id)).toEqual([created[4], created[2], created[0]]);

    expectError(await call('GET', '/v1/sessions?limit=0', auth), 400, 'invalid_body');
    expectError(await call('GET', '/v1/sessions?status=sleeping', auth), 400, 'invalid_body');
    expectError(await call('GET', '/v1/sessions?after=not-a-uuid', auth), 400, 'invalid_body');
    // A well-formed cursor that is no session of this project is an unknown id (the OpenAPI
    // document's schema takes any uuid): 404, not a 400 for a valid request.
    expectError(await call('GET', `/v1/sessions?after=${randomUUID()}`, auth), 404, 'session_not_found');
  });

  it('pauses a session message for custom tools; tool-outputs resumes it as a session message', async () => {
    const { auth } = await stack.fixtures.project({ credits: 10 });
    const session = (await create(auth)).body;
    const first = await send(auth, session.id, {
      message: 'What is the weather? use get_weather {"city":"Oslo"}',
      tools: [weatherTool],
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      object: 'session.message',
      session_id: session.id,
      status: 'requires_tool_outputs',
      tool_calls: [{ id: expect.any(String), name: 'get_weather', arguments: { city: 'Oslo' } }],
      usage: { credits_this_request: 1, credits_remaining: 9 },
    });
    expect(first.body.message).toBeUndefined();

    const second = await call('POST', `/v1/agent/${first.body.id}/tool-outputs`, auth, {
      tool_outputs: [{ tool_call_id: first.body.tool_calls[0].id, output: 'Sunny, 21 C' }],
      _compute_instance: first.body._compute_instance,
    });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({
      id: first.body.id,
      object: 'session.message',
      session_id: session.id,
      status: 'completed',
      message: expect.stringContaining('Sunny, 21 C'),
      usage: { credits_this_request: 0, credits_remaining: 9 },
    });
    expect(second.headers.get('x-request-id')).toBe(first.body.id);

    // The next message is answered after the exchange entered the conversation.
    const third = await send(auth, session.id, { message: 'Thanks!' });
    expect(third.body).toMatchObject({ status: 'completed', message: 'You said: "Thanks!"' });
    expect((await call('GET', `/v1/sessions/${session.id}`, auth)).body.message_count).toBe(4);
  });

  it('answers 409 session_busy while the previous message runs or waits for tool outputs, records nothing for it, and takes the next once the pause is answered', async () => {
    // Credits enough for a busy message to pass the api's admission (it comes before the session
    // decides busy), whose reservation the refusal then undoes.
    const { auth, project } = await stack.fixtures.project({
      credits: 20,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-session-busy' },
    });
    const session = (await create(auth)).body;
    const path = `/v1/sessions/${session.id}/messages`;
    const lookup = {
      name: 'lookup',
      description: 'Look something up',
      parameters: { type: 'object', properties: { q: { type: 'string' } } },
    };
    const account = async () => {
      const p = await stack.fixtures.accounts.findProject(project.id);
      return { credits: p.creditBalance, requestsUsed: p.requestsUsed };
    };
    /** Rows anywhere that name the request: events, credit ledger, request views, conversations. */
    const traces = async (requestId: string): Promise<number> => {
      const [row] = (await stack.fixtures.db.query(
        `select (select count(*) from events where data::text like '%' || $1 || '%' or metadata::text like '%' || $1 || '%')
              + (select count(*) from credit_ledger where request_id = $1::uuid)
              + (select count(*) from request_views where request_id = $1::uuid)
              + (select count(*) from conversations where id = $1::uuid) as n`,
        [requestId],
      )) as { n: string }[];
      return Number(row!.n);
    };
    const refusedIds: string[] = [];
    const expectBusy = (res: JsonResponse): void => {
      expectError(res, 409, 'session_busy');
      refusedIds.push(res.headers.get('x-request-id')!);
    };

    // Running: the model takes 2 seconds to answer.
    stack.models.reply({ content: 'Slowly, yes.', delayMs: 2000 });
    const calls = stack.models.requests.length;
    const running = send(auth, session.id, { message: 'Take your time.' });
    while (stack.models.requests.length === calls) await new Promise((r) => setTimeout(r, 20));
    const whileRunning = await account();
    expectBusy(await send(auth, session.id, { message: 'Are you there?' }));
    // With an Idempotency-Key: refused, and the key keeps no answer.
    const key = randomUUID();
    const keyed = await call('POST', path, { ...auth, 'idempotency-key': key }, { message: 'Still there?' });
    expectError(keyed, 409, 'session_busy');
    expect(await account()).toEqual(whileRunning);
    const first = await running;
    expect(first.body).toMatchObject({
      status: 'completed',
      message: 'Slowly, yes.',
      usage: { credits_this_request: 1, credits_remaining: 19 },
    });

    // Paused for tool outputs.
    stack.models.reply({ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] });
    const paused = await send(auth, session.id, { message: 'lookup {"q":"x"}', tools: [lookup] });
    expect(paused.body).toMatchObject({
      status: 'requires_tool_outputs',
      tool_calls: [{ name: 'lookup', arguments: { q: 'x' } }],
    });
    const whilePaused = await account();
    const busy = await send(auth, session.id, { message: 'And now?' });
    expectBusy(busy);
    expect(busy.body.error.message).toContain(paused.body.id);
    expectError(
      await call('POST', path, { ...auth, 'idempotency-key': key }, { message: 'Still there?' }),
      409,
      'session_busy',
    );
    expect(await account()).toEqual(whilePaused);

    const resumed = await call('POST', `/v1/agent/${paused.body.id}/tool-outputs`, auth, {
      tool_outputs: [{ tool_call_id: paused.body.tool_calls[0].id, output: 'found' }],
      _compute_instance: paused.body._compute_instance,
    });
    expect(resumed.body).toMatchObject({ id: paused.body.id, status: 'completed' });
    // The moment the pause is answered, the session takes the next message: the refused key's
    // retry runs it, once.
    stack.models.reply({ content: 'Here now.' });
    const next = await call('POST', path, { ...auth, 'idempotency-key': key }, { message: 'Still there?' });
    expect(next.status).toBe(200);
    expect(next.body).toMatchObject({
      object: 'session.message',
      status: 'completed',
      message: 'Here now.',
      usage: { credits_this_request: 1, credits_remaining: 17 },
    });
    expect(next.headers.get('x-request-id')).toBe(keyed.headers.get('x-request-id'));
    expect(await account()).toEqual({ credits: whilePaused.credits - 1, requestsUsed: whilePaused.requestsUsed + 1 });
    expect((await call('GET', `/v1/sessions/${session.id}`, auth)).body.message_count).toBe(6);
    // The refused messages left nothing behind: no event, no reservation, no view, no conversation.
    expect(refusedIds).toHaveLength(2);
    for (const id of refusedIds) expect({ id, traces: await traces(id) }).toEqual({ id, traces: 0 });

    const doc = (await call('GET', '/v1/openapi.json', auth)).body;
    expect(doc.paths['/v1/sessions/{id}/messages'].post.responses['409'].description).toContain('`session_busy`');
  });

  it('expires after the idle timeout: 410 session_expired, and it stops counting at once', async () => {
    const { auth } = await stack.fixtures.project({ credits: 10 });
    const session = (await create(auth, shortApi)).body;
    expect(session.expires_at - session.created_at).toBe(SHORT_IDLE_MS / 1000);
    expect((await send(auth, session.id, { message: 'quick one' })).status).toBe(200);
    let read = await call('GET', `/v1/sessions/${session.id}`, auth);
    for (let i = 0; i < 50 && read.body.status === 'active'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      read = await call('GET', `/v1/sessions/${session.id}`, auth);
    }
    expect(read.body).toMatchObject({ status: 'expired', message_count: 2 });
    expectError(await send(auth, session.id, { message: 'hello?' }), 410, 'session_expired');
    expectError(await call('DELETE', `/v1/sessions/${session.id}`, auth), 410, 'session_expired');
    expect((await call('GET', '/v1/sessions?status=active', auth)).body.data).toEqual([]);
  });
});
