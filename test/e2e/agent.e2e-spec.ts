import { randomUUID } from 'node:crypto';
import { AesGcmPayloadCodec } from '#libs/temporal';
import { agentRequestWorkflowId } from '#libs/contracts';
import { e2eStack } from '../support/e2e-stack.js';
import { request } from '../support/http.js';
import { connectTemporal, historyText } from '../support/temporal.js';

const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('POST /v1/agent', () => {
  const stack = e2eStack({ name: 'agent' });

  it('answers a one-shot request with every AgentResponse field and the headers', async () => {
    const { project, auth } = await stack.fixtures.project({ credits: 10 });
    const res = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'Hello there' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      object: 'agent.response',
      status: 'completed',
      message: 'You said: "Hello there"',
      capabilities_used: ['chat'],
      files: [],
      usage: { credits_this_request: 1, credits_remaining: 9, tokens_used: expect.any(Number) },
      meta: { duration_ms: expect.any(Number), project_id: project.id, plan: 'pro' },
      _compute_instance: `default/${stack.env.TEMPORAL_TASK_QUEUE}`,
    });
    expect(res.body.usage.tokens_used).toBeGreaterThan(0);
    expect(res.headers.get('x-request-id')).toBe(res.body.id);
    expect(res.headers.get('x-ratelimit-limit')).toBe('50000');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('49999');
    expect(Number(res.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);

    const read = await request(stack.api.url, 'GET', `/v1/agent/${res.body.id}`, { headers: auth });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: res.body.id, status: 'completed', message: 'You said: "Hello there"' });
  });

  it('pauses for custom tools, resumes with their outputs, and charges only the first leg', async () => {
    const { auth } = await stack.fixtures.project({ credits: 10 });
    const first = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'What is the weather? use get_weather {"city":"Oslo"}', tools: [weatherTool] },
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      object: 'agent.response',
      status: 'requires_tool_outputs',
      tool_calls: [{ id: expect.any(String), name: 'get_weather', arguments: { city: 'Oslo' } }],
      capabilities_used: ['chat'],
      usage: { credits_this_request: 1, credits_remaining: 9 },
    });
    expect(first.body.message).toBeUndefined();
    const call = first.body.tool_calls[0];

    const second = await request(stack.api.url, 'POST', `/v1/agent/${first.body.id}/tool-outputs`, {
      headers: auth,
      body: {
        tool_outputs: [{ tool_call_id: call.id, output: 'Sunny, 21 C' }],
        _compute_instance: first.body._compute_instance,
      },
    });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({
      id: first.body.id,
      status: 'completed',
      message: expect.stringContaining('Sunny, 21 C'),
      usage: { credits_this_request: 0, credits_remaining: 9 },
    });
    expect(second.headers.get('x-request-id')).toBe(first.body.id);

    // The context is gone once the request finished.
    const again = await request(stack.api.url, 'POST', `/v1/agent/${first.body.id}/tool-outputs`, {
      headers: auth,
      body: { tool_outputs: [{ tool_call_id: call.id, output: 'x' }], _compute_instance: first.body._compute_instance },
    });
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('context_expired');
  });

  it('calls an OpenAI-compatible server with the project key, through a tool round trip', async () => {
    const { auth } = await stack.fixtures.project({
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-openai-secret-1' },
    });
    stack.models.reply(
      { toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
      { content: 'It is sunny in Paris.' },
    );
    const first = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'Weather in Paris?', tools: [weatherTool] },
    });
    expect(first.body).toMatchObject({
      status: 'requires_tool_outputs',
      tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }],
    });
    const second = await request(stack.api.url, 'POST', `/v1/agent/${first.body.id}/tool-outputs`, {
      headers: auth,
      body: {
        tool_outputs: [{ tool_call_id: first.body.tool_calls[0].id, output: '{"sky":"clear"}' }],
        _compute_instance: first.body._compute_instance,
      },
    });
    expect(second.body).toMatchObject({ status: 'completed', message: 'It is sunny in Paris.' });
    const calls = stack.models.requests.filter((r) => r.path.endsWith('/chat/completions')).slice(-2);
    expect(calls[0]?.headers.authorization).toBe('Bearer sk-openai-secret-1');
    expect(calls[1]?.body.messages.at(-1)).toMatchObject({ role: 'tool', content: '{"sky":"clear"}' });
  });

  // Issue 28: the Update id of a submission was its project and body alone. A provider that numbers
  // each turn's tool calls from 0 gives the same ids in the next round, and a client whose tool
  // answers the same (a status still "pending") sent the same body: Temporal answered the second
  // round's submission with the first round's outcome, and the outputs never reached the run.
  it('delivers a second round whose tool call ids and outputs repeat the first round', async () => {
    const { auth } = await stack.fixtures.project({
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-openai-rounds' },
    });
    const poll = { id: 'call_0', name: 'get_weather', arguments: { city: 'Oslo' } };
    stack.models.reply({ toolCalls: [poll] }, { toolCalls: [poll] }, { content: 'Finally sunny.' });
    const first = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'Weather?', tools: [weatherTool] },
    });
    expect(first.body).toMatchObject({ status: 'requires_tool_outputs', tool_calls: [{ id: 'call_0' }] });
    const submission = {
      tool_outputs: [{ tool_call_id: 'call_0', output: 'pending' }],
      _compute_instance: first.body._compute_instance,
    };
    const second = await request(stack.api.url, 'POST', `/v1/agent/${first.body.id}/tool-outputs`, {
      headers: auth,
      body: submission,
    });
    expect(second.body).toMatchObject({ status: 'requires_tool_outputs', tool_calls: [{ id: 'call_0' }] });
    const third = await request(stack.api.url, 'POST', `/v1/agent/${first.body.id}/tool-outputs`, {
      headers: auth,
      body: submission,
    });
    expect(third.body).toMatchObject({ status: 'completed', message: 'Finally sunny.' });
    // A duplicate of the last submission, sent after the request ended, still gets its answer.
    const again = await request(stack.api.url, 'POST', `/v1/agent/${first.body.id}/tool-outputs`, {
      headers: auth,
      body: submission,
    });
    expect(again.body).toMatchObject({ status: 'completed', message: 'Finally sunny.' });
  });

  it('calls an Anthropic server', async () => {
    const { auth } = await stack.fixtures.project({
      model: { provider: 'anthropic', model: 'claude-test', baseUrl: stack.models.origin, apiKey: 'sk-ant-secret-2' },
    });
    stack.models.reply({ content: 'Bonjour from Anthropic.' });
    const res = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'Say hello' } });
    expect(res.body).toMatchObject({ status: 'completed', message: 'Bonjour from Anthropic.' });
    expect(stack.models.requests.at(-1)?.headers['x-api-key']).toBe('sk-ant-secret-2');
  });

  it('reports a rejected model key as compute_error with the provider message and no key, charging nothing', async () => {
    const { auth, project } = await stack.fixtures.project({
      credits: 10,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-wrong-key-3' },
    });
    stack.models.requireKey('sk-the-right-key');
    try {
      const res = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'hi' } });
      expect(res.status).toBe(502);
      expect(res.body.error).toMatchObject({
        code: 'compute_error',
        message: expect.stringContaining('401'),
        docs: `${stack.config.publicBaseUrl}/docs/errors#compute_error`,
      });
      expect(JSON.stringify(res.body)).not.toContain('sk-wrong-key-3');
      expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(10);
    } finally {
      stack.models.requireKey(undefined);
    }
  });

  it('keeps the model key and the API key out of the Temporal history', async () => {
    const { auth, key } = await stack.fixtures.project({
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-model-key-never-logged' },
    });
    stack.models.reply({ content: 'done' });
    const res = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'hello' } });
    expect(res.body.status).toBe('completed');
    const { client, connection } = await connectTemporal(stack.config);
    try {
      const history = await client.workflow.getHandle(agentRequestWorkflowId(res.body.id)).fetchHistory();
      // Payloads are encrypted in the history: search them as the codec decrypts them.
      const text = JSON.stringify(history) + (await historyText(history, AesGcmPayloadCodec.fromConfig(stack.config)));
      expect(text).toContain('hello');
      expect(text).not.toContain('sk-model-key-never-logged');
      expect(text).not.toContain(key);
      expect(text).not.toContain(key.slice(7));
    } finally {
      await connection.close();
    }
  });

  it('returns the first response for a repeated Idempotency-Key with the same body, 409 for another body', async () => {
    const { auth } = await stack.fixtures.project({ credits: 10 });
    const headers = { ...auth, 'idempotency-key': `order-${randomUUID()}` };
    const first = await request(stack.api.url, 'POST', '/v1/agent', {
      headers,
      body: { message: 'charge me once', capabilities: ['chat'] },
    });
    expect(first.status).toBe(200);
    // The same parsed body (keys in another order) is the same request.
    const again = await request(stack.api.url, 'POST', '/v1/agent', {
      headers,
      body: { capabilities: ['chat'], message: 'charge me once' },
    });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('x-request-id')).toBe(first.body.id);
    expect((await stack.fixtures.accounts.findProject(first.body.meta.project_id)).creditBalance).toBe(9);

    const conflict = await request(stack.api.url, 'POST', '/v1/agent', {
      headers,
      body: { message: 'something else' },
    });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error).toEqual({
      code: 'idempotency_conflict',
      message: expect.stringContaining('different request body'),
      docs: `${stack.config.publicBaseUrl}/docs/errors#idempotency_conflict`,
    });
  });
});
