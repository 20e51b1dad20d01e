import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { request, type JsonResponse } from '../support/http.js';

/** How long the model takes: long enough that the first run still holds the api's only slot. */
const SLOW_MS = 3_000;

const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/**
 * Overload (issue 16): an api with API_MAX_RUNS_IN_FLIGHT runs waiting for their next stop lets
 * the next run wait API_RUN_WAIT_MS for a turn, then answers 503 service_unavailable with
 * Retry-After before anything starts: nothing admitted, nothing reserved, nothing charged. Every
 * path that makes a run go on passes the gate (issue 29): a new request, a session's message and
 * a tool-output continuation.
 */
describe('overload: runs past API_MAX_RUNS_IN_FLIGHT', () => {
  const stack = e2eStack({ name: 'overload', env: { API_MAX_RUNS_IN_FLIGHT: '1', API_RUN_WAIT_MS: '300' } });

  it('answers 503 with Retry-After to the run that found no turn, and starts nothing for it', async () => {
    const { project, auth } = await stack.fixtures.project({
      credits: 20,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' },
    });
    stack.models.reply({ content: 'slow answer', delayMs: SLOW_MS });
    const first = request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'first' } });
    // The first run holds the slot once the model has its call.
    await eventually(async () => expect(stack.models.requests.length).toBe(1));
    const second = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'second' } });
    expect(second.status).toBe(503);
    expect(second.body).toMatchObject({ error: { code: 'service_unavailable', message: expect.any(String) } });
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await first).body).toMatchObject({ status: 'completed', message: 'slow answer' });
    // The refused run reserved nothing and never reached the model: one admission, one charge.
    const ledger: { kind: string }[] = await stack.fixtures.db.query(
      `select kind from credit_ledger where project_id = $1 order by kind`,
      [project.id],
    );
    expect(ledger.map((r) => r.kind)).toEqual(['reserve', 'settle']);
    expect(stack.models.requests).toHaveLength(1);
    expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(19);
    // Once the slot is free, the next run goes through.
    const third = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'third' } });
    expect(third.status).toBe(200);
  });

  /** Starts a run whose model answers slowly, and resolves (with its answer to come) once it
   * holds the api's only slot. */
  const holdTheSlot = async (auth: Record<string, string>): Promise<{ answer: Promise<JsonResponse> }> => {
    const before = stack.models.requests.length;
    stack.models.reply({ content: 'slow answer', delayMs: SLOW_MS });
    const slow = request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'slow' } });
    await eventually(async () => expect(stack.models.requests.length).toBe(before + 1));
    return { answer: slow };
  };
  const model = () => ({
    provider: 'openai' as const,
    model: 'gpt-test',
    baseUrl: stack.models.url,
    apiKey: 'sk-test',
  });

  it('answers 503 to a session message that found no turn, and the session takes nothing', async () => {
    const { auth } = await stack.fixtures.project({ credits: 20, model: model() });
    const session = await request(stack.api.url, 'POST', '/v1/sessions', { headers: auth });
    expect(session.status).toBe(200);
    const slow = await holdTheSlot(auth);
    const refused = await request(stack.api.url, 'POST', `/v1/sessions/${session.body.id}/messages`, {
      headers: auth,
      body: { message: 'hello' },
    });
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ error: { code: 'service_unavailable', message: expect.any(String) } });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await slow.answer).body).toMatchObject({ status: 'completed', message: 'slow answer' });
    // Nothing reached the session: the next message is its first (not session_busy).
    stack.models.reply({ content: 'hi there' });
    const sent = await request(stack.api.url, 'POST', `/v1/sessions/${session.body.id}/messages`, {
      headers: auth,
      body: { message: 'hello' },
    });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ object: 'session.message', status: 'completed', message: 'hi there' });
    const read = await request(stack.api.url, 'GET', `/v1/sessions/${session.body.id}`, { headers: auth });
    expect(read.body).toMatchObject({ message_count: 2 });
  });

  it('answers 503 to tool outputs that found no turn, and delivers nothing', async () => {
    const { auth } = await stack.fixtures.project({ credits: 20, model: model() });
    stack.models.reply({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] });
    const paused = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'Weather in Oslo?', tools: [weatherTool] },
    });
    expect(paused.body).toMatchObject({ status: 'requires_tool_outputs' });
    const outputs = {
      tool_outputs: [{ tool_call_id: paused.body.tool_calls[0].id, output: 'Sunny, 21 C' }],
      _compute_instance: paused.body._compute_instance,
    };
    const slow = await holdTheSlot(auth);
    const refused = await request(stack.api.url, 'POST', `/v1/agent/${paused.body.id}/tool-outputs`, {
      headers: auth,
      body: outputs,
    });
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ error: { code: 'service_unavailable' } });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('x-request-id')).toBe(paused.body.id);
    await slow.answer;
    // The outputs were not delivered: the request still waits for them, and takes them now.
    const read = await request(stack.api.url, 'GET', `/v1/agent/${paused.body.id}`, { headers: auth });
    expect(read.body).toMatchObject({ status: 'requires_tool_outputs' });
    stack.models.reply({ content: 'It is sunny in Oslo.' });
    const resumed = await request(stack.api.url, 'POST', `/v1/agent/${paused.body.id}/tool-outputs`, {
      headers: auth,
      body: outputs,
    });
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ status: 'completed', message: 'It is sunny in Oslo.' });
  });
});
