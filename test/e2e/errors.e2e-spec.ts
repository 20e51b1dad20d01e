import { randomUUID } from 'node:crypto';
import type { ErrorCode } from '#libs/contracts';
import { startApi } from '../support/api.js';
import { testConfig } from '../support/config.js';
import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { request, type JsonResponse } from '../support/http.js';

// Every error code of the contract and of DESIGN.md section 7, provoked over HTTP.
const config = testConfig();

function expectError(res: JsonResponse, status: number, code: ErrorCode, message?: RegExp | string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(res.headers.get('content-type')).toContain('application/json');
  expect(Object.keys(res.body)).toEqual(['error']);
  expect(Object.keys(res.body.error).sort()).toEqual(['code', 'docs', 'message']);
  expect(res.body.error.docs).toBe(`${config.publicBaseUrl}/docs/errors#${code}`);
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error.message.length).toBeGreaterThan(10);
  if (message) expect(res.body.error.message).toMatch(message);
}

const tool = (overrides: Record<string, unknown> = {}) => ({
  name: 'lookup',
  description: 'Look something up',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
  ...overrides,
});

describe('contract errors over HTTP', () => {
  const stack = e2eStack({ name: 'errors' });
  let auth: { authorization: string };

  beforeAll(async () => {
    ({ auth } = await stack.fixtures.project({ credits: 1000 }));
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = auth) =>
    request(stack.api.url, 'POST', path, { headers, body });

  it('serves the page every docs link points into', async () => {
    const res = await request(stack.api.url, 'GET', '/docs/errors');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    for (const code of ['invalid_api_key', 'context_expired', 'session_expired', 'stream_not_supported']) {
      expect(res.body).toContain(`id="${code}"`);
    }
  });

  describe('401 invalid_api_key', () => {
    it.each([
      ['a missing header', {}, /Missing Authorization header/],
      ['another scheme', { authorization: 'Basic dXNlcjpwYXNz' }, /Bearer scheme/],
      ['a malformed key', { authorization: 'Bearer sk-mas_tooShort' }, /malformed, unknown or revoked/],
      ['an unknown key', { authorization: `Bearer sk-mas_${'A'.repeat(43)}` }, /malformed, unknown or revoked/],
    ])('for %s', async (_, headers, message) => {
      expectError(await post('/v1/agent', { message: 'hi' }, headers), 401, 'invalid_api_key', message);
    });

    // Within the second DESIGN.md section 10 allows a cached key (test/e2e/credential-caches.e2e-spec.ts
    // measures it), rather than from the very next request.
    it('for a revoked key, once the api heard the revocation', async () => {
      const { key, project } = await stack.fixtures.project();
      const headers = { authorization: `bearer ${key}` };
      expect((await post('/v1/agent', { message: 'hi' }, headers)).status).toBe(200);
      const [record] = await stack.fixtures.accounts.listApiKeys(project.id);
      await stack.fixtures.accounts.revokeApiKey(record!.id);
      await eventually(
        async () => expectError(await post('/v1/agent', { message: 'hi' }, headers), 401, 'invalid_api_key'),
        5000,
      );
    });
  });

  describe('400 on the body', () => {
    it('invalid_body for invalid JSON, a non-object, or a non-boolean stream', async () => {
      expectError(await post('/v1/agent', '{"message": '), 400, 'invalid_body', /not valid JSON/);
      expectError(await post('/v1/agent', '["message"]'), 400, 'invalid_body', /JSON object/);
      expectError(await post('/v1/agent', { message: 'hi', stream: 'yes' }), 400, 'invalid_body', /stream/);
      expectError(await post(`/v1/agent/${randomUUID()}/tool-outputs`, 'not json'), 400, 'invalid_body');
    });

    // Bodies over 256 KB are parsed on a thread of their own (apps/api/src/json-off-thread.ts).
    it('the same answers for a body parsed off the event loop', async () => {
      const big = 'x'.repeat(1_100_000);
      expectError(await post('/v1/agent', `{"message": "${big}"`), 400, 'invalid_body', /not valid JSON/);
      expectError(await post('/v1/agent', `["${big}"]`), 400, 'invalid_body', /JSON object/);
      expectError(await post('/v1/agent', { message: big }), 400, 'message_too_long', /100,000/);
      expectError(await post('/v1/agent', `\ufeff{"message": "${big}"}`), 400, 'message_too_long', /100,000/);
    });

    it.each([[{}], [{ message: '' }], [{ message: '   \n' }], [{ message: 42 }]])(
      'missing_message for %j',
      async (body) => {
        expectError(await post('/v1/agent', body), 400, 'missing_message');
      },
    );

    it('message_too_long over 100,000 characters', async () => {
      expectError(await post('/v1/agent', { message: 'x'.repeat(100_001) }), 400, 'message_too_long', /100,000/);
      expect((await post('/v1/agent', { message: 'x'.repeat(100_000) })).status).toBe(200);
    });

    it('invalid_capabilities names the unknown ones and the valid ones', async () => {
      expectError(
        await post('/v1/agent', { message: 'hi', capabilities: ['chat', 'teleport', 'magic'] }),
        400,
        'invalid_capabilities',
        'Unknown capabilities: teleport, magic. Valid capabilities: chat, research, documents, code, data, files.',
      );
      expectError(await post('/v1/agent', { message: 'hi', capabilities: 'chat' }), 400, 'invalid_capabilities');
      expectError(await post('/v1/agent', { message: 'hi', capabilities: [] }), 400, 'invalid_capabilities');
    });

    it.each([
      ['a name outside the pattern', [tool({ name: 'bad-name' })], /pattern|\^\[a-zA-Z0-9_\]/],
      ['a 65-character name', [tool({ name: 'a'.repeat(65) })], /limit is 64/],
      ['a 1025-character description', [tool({ description: 'd'.repeat(1025) })], /limit is 1024/],
      ['parameters that are not an object schema', [tool({ parameters: { type: 'string' } })], /"type" is "object"/],
      [
        'parameters that are not a valid JSON Schema',
        [tool({ parameters: { type: 'object', properties: 5 } })],
        /not a valid JSON Schema/,
      ],
      ['more than 20 tools', Array.from({ length: 21 }, (_, i) => tool({ name: `t${i}` })), /At most 20/],
      ['not an array', tool(), /array/],
    ])('invalid_tools for %s', async (_, tools, message) => {
      expectError(await post('/v1/agent', { message: 'hi', tools }), 400, 'invalid_tools', message);
    });

    it('accepts a 64-character name and a 1024-character description', async () => {
      const res = await post('/v1/agent', {
        message: 'hi',
        tools: [tool({ name: 'a'.repeat(64), description: 'd'.repeat(1024) })],
      });
      expect(res.status).toBe(200);
    });

    it.each([
      ['not an array', { name: 'a.txt', content: 'x' }],
      ['an item without content', [{ name: 'a.txt' }]],
      ['more than 20 files', Array.from({ length: 21 }, (_, i) => ({ name: `${i}.txt`, content: 'x' }))],
      ['a file over 1 MB', [{ name: 'big.txt', content: 'x'.repeat(1_048_577) }]],
    ])('invalid_files for %s', async (_, files) => {
      expectError(await post('/v1/agent', { message: 'hi', files }), 400, 'invalid_files');
    });

    it('stream_not_supported for stream with tools', async () => {
      expectError(
        await post('/v1/agent', { message: 'hi', stream: true, tools: [tool()] }),
        400,
        'stream_not_supported',
      );
    });

    it('payload_too_large over 10 MB', async () => {
      expectError(await post('/v1/agent', { message: 'x'.repeat(10 * 1024 * 1024 + 10) }), 413, 'payload_too_large');
    });
  });

  describe('403', () => {
    it('capability_not_enabled names the capabilities', async () => {
      const { auth: a } = await stack.fixtures.project({ capabilities: ['chat', 'documents'] });
      expectError(
        await post('/v1/agent', { message: 'hi', capabilities: ['chat', 'code', 'data'] }, a),
        403,
        'capability_not_enabled',
        'Capabilities not enabled on this project: code, data.',
      );
    });

    it('plan_restricted before capability_not_enabled', async () => {
      const { auth: a } = await stack.fixtures.project({ plan: 'free' });
      expectError(
        await post('/v1/agent', { message: 'hi', capabilities: ['research'] }, a),
        403,
        'plan_restricted',
        /free plan does not include: research/,
      );
    });
  });

  describe('402 and 429', () => {
    it('insufficient_credits runs nothing and charges nothing', async () => {
      const { auth: a, project } = await stack.fixtures.project({ credits: 0 });
      expectError(await post('/v1/agent', { message: 'hi' }, a), 402, 'insufficient_credits');
      const after = await stack.fixtures.accounts.findProject(project.id);
      expect(after.creditBalance).toBe(0);
    });

    it('quota_exceeded names the quota', async () => {
      const small = await startApi({
        ...stack.env,
        MAS_PLANS: '{"starter":{"monthlyQuota":1,"capabilities":["chat"]}}',
      });
      try {
        const { auth: a } = await stack.fixtures.project({ plan: 'starter', capabilities: ['chat'] });
        expect((await request(small.url, 'POST', '/v1/agent', { headers: a, body: { message: 'one' } })).status).toBe(
          200,
        );
        const res = await request(small.url, 'POST', '/v1/agent', { headers: a, body: { message: 'two' } });
        expectError(res, 429, 'quota_exceeded', /quota of 1 requests/);
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      } finally {
        await small.close();
      }
    });

    it('rate_limited on the 61st request within a minute, with Retry-After', async () => {
      const { auth: a } = await stack.fixtures.project();
      const id = randomUUID();
      for (let i = 0; i < 60; i++) {
        expect((await request(stack.api.url, 'GET', `/v1/agent/${id}`, { headers: a })).status).toBe(404);
      }
      const res = await request(stack.api.url, 'GET', `/v1/agent/${id}`, { headers: a });
      expectError(res, 429, 'rate_limited', /60 requests/);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    });
  });

  describe('tool outputs', () => {
    let paused: { id: string; instance: string; callId: string };
    beforeAll(async () => {
      const res = await post('/v1/agent', { message: 'please lookup {"q":"x"}', tools: [tool()] });
      expect(res.body.status).toBe('requires_tool_outputs');
      paused = { id: res.body.id, instance: res.body._compute_instance, callId: res.body.tool_calls[0].id };
    });
    const submit = (body: unknown, id = paused.id, headers = auth) =>
      post(`/v1/agent/${id}/tool-outputs`, body, headers);

    it.each([
      ['a missing list', { _compute_instance: 'x' }],
      ['an item without a string output', { tool_outputs: [{ tool_call_id: 'a', output: 5 }], _compute_instance: 'x' }],
      ['a missing _compute_instance', { tool_outputs: [{ tool_call_id: 'a', output: 'b' }] }],
    ])('invalid_tool_outputs for %s', async (_, body) => {
      expectError(await submit(body), 400, 'invalid_tool_outputs');
    });

    it('invalid_tool_outputs for ids that are not the pending calls, recording nothing', async () => {
      expectError(
        await submit({
          tool_outputs: [{ tool_call_id: 'call_other', output: 'b' }],
          _compute_instance: paused.instance,
        }),
        400,
        'invalid_tool_outputs',
        /unknown tool_call_id: call_other/,
      );
      const state = await request(stack.api.url, 'GET', `/v1/agent/${paused.id}`, { headers: auth });
      expect(state.body.status).toBe('requires_tool_outputs');
    });

    it('tool_output_too_large over 100 KB', async () => {
      expectError(
        await submit({
          tool_outputs: [{ tool_call_id: paused.callId, output: 'x'.repeat(102_401) }],
          _compute_instance: paused.instance,
        }),
        400,
        'tool_output_too_large',
        /102400/,
      );
    });

    it('context_expired for an unknown id, another project, or another compute instance', async () => {
      const body = { tool_outputs: [{ tool_call_id: paused.callId, output: 'b' }], _compute_instance: paused.instance };
      expectError(await submit(body, randomUUID()), 404, 'context_expired');
      expectError(await submit(body, 'not-a-uuid'), 404, 'context_expired');
      const other = await stack.fixtures.project();
      expectError(await submit(body, paused.id, other.auth), 404, 'context_expired');
      expectError(await submit({ ...body, _compute_instance: 'elsewhere/queue' }), 404, 'context_expired');
    });
  });

  it("request_not_found for an unknown request or another project's", async () => {
    expectError(
      await request(stack.api.url, 'GET', `/v1/agent/${randomUUID()}`, { headers: auth }),
      404,
      'request_not_found',
    );
    const mine = await post('/v1/agent', { message: 'hi' });
    const other = await stack.fixtures.project();
    expectError(
      await request(stack.api.url, 'GET', `/v1/agent/${mine.body.id}`, { headers: other.auth }),
      404,
      'request_not_found',
    );
  });

  it('not_found for an unknown route, in the same envelope', async () => {
    expectError(await request(stack.api.url, 'GET', '/v1/nothing-here', { headers: auth }), 404, 'not_found');
    expectError(await request(stack.api.url, 'GET', '/nothing-here'), 404, 'not_found');
  });

  it('internal_error 500 for an unexpected failure, without internals', async () => {
    // An api whose database has none of the service's tables: the key lookup fails unexpectedly.
    // The URL's path only: its query may name files (sslrootcert=/path/ca.crt on a TLS database).
    const postgres = new URL(config.databaseUrl);
    postgres.pathname = '/postgres';
    const broken = await startApi({ ...stack.env, DATABASE_URL: postgres.toString() });
    try {
      const res = await request(broken.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'hi' } });
      expectError(res, 500, 'internal_error', 'An unexpected error occurred. It has been logged.');
      expect(JSON.stringify(res.body)).not.toMatch(/relation|api_keys|at .*\.ts/);
    } finally {
      await broken.close();
    }
  });

  describe('compute errors', () => {
    it('service_unavailable 503 when no Temporal address is configured', async () => {
      const bare = await startApi({ ...stack.env, TEMPORAL_ADDRESS: undefined });
      try {
        expectError(
          await request(bare.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'hi' } }),
          503,
          'service_unavailable',
        );
      } finally {
        await bare.close();
      }
    });

    it('service_unavailable 503 when the project has no model, charging nothing', async () => {
      const { auth: a, project } = await stack.fixtures.project({ model: null, credits: 10 });
      expectError(
        await post('/v1/agent', { message: 'hi' }, a),
        503,
        'service_unavailable',
        /No language model is configured/,
      );
      expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(10);
    });

    it('compute_unavailable 502 when no worker takes the request up in time', async () => {
      const lonely = await startApi({ TEMPORAL_TASK_QUEUE: `nobody-${randomUUID()}`, AGENT_PICKUP_TIMEOUT_MS: '1500' });
      try {
        expectError(
          await request(lonely.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'hi' } }),
          502,
          'compute_unavailable',
          /No agent worker/,
        );
      } finally {
        await lonely.close();
      }
    });

    it('compute_unavailable 502 when Temporal cannot be reached', async () => {
      const cut = await startApi({ ...stack.env, TEMPORAL_ADDRESS: '127.0.0.1:2', AGENT_PICKUP_TIMEOUT_MS: '1500' });
      try {
        expectError(
          await request(cut.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'hi' } }),
          502,
          'compute_unavailable',
        );
      } finally {
        await cut.close();
      }
    });

    it('compute_unavailable 502 when the model server cannot be reached, charging nothing', async () => {
      const { auth: a, project } = await stack.fixtures.project({
        credits: 10,
        model: { provider: 'openai', model: 'gpt-test', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-test' },
      });
      expectError(await post('/v1/agent', { message: 'hi' }, a), 502, 'compute_unavailable', /could not be reached/);
      expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(10);
    });
  });
});
