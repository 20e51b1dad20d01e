import { randomUUID } from 'node:crypto';
import { testConfig } from '../support/config.js';
import { e2eStack } from '../support/e2e-stack.js';
import { readSse, type SseResult } from '../support/sse.js';

// A stream refused at admission answers like a request without `stream`: the contract's status and
// JSON error, not a 200 with an SSE `error` event.
const config = testConfig();
const env = {
  TEMPORAL_TASK_QUEUE: `e2e-streaming-refusals-${randomUUID()}`,
  MAS_PLANS: '{"starter":{"monthlyQuota":1,"capabilities":["chat"]}}',
};

function expectJsonError(res: SseResult, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code, events: res.events.length }).toEqual({
    status,
    code,
    events: 0,
  });
  expect(res.headers.get('content-type')).toContain('application/json');
  expect(res.body.error.docs).toBe(`${config.publicBaseUrl}/docs/errors#${code}`);
  expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
}

describe('streams refused at admission', () => {
  const stack = e2eStack({ name: 'streaming-refusals', env });

  const stream = (
    auth: Record<string, string>,
    message: string,
    headers: Record<string, string> = {},
  ): Promise<SseResult> =>
    readSse(`${stack.api.url}/v1/agent`, {
      method: 'POST',
      headers: { ...auth, ...headers },
      body: { message, stream: true, capabilities: ['chat'] },
    });

  it('is 402 insufficient_credits as JSON, and so is its retry with the same key', async () => {
    const { auth } = await stack.fixtures.project({ credits: 0 });
    expectJsonError(await stream(auth, 'no credits', { 'idempotency-key': 'k1' }), 402, 'insufficient_credits');
    expectJsonError(await stream(auth, 'no credits', { 'idempotency-key': 'k1' }), 402, 'insufficient_credits');
  });

  it('is 429 quota_exceeded as JSON with Retry-After, once the month is used up', async () => {
    const { auth } = await stack.fixtures.project({ plan: 'starter', capabilities: ['chat'], credits: 10 });
    const admitted = await stream(auth, 'the one request of the month');
    expect({ status: admitted.status, last: admitted.events.at(-1)?.event }).toEqual({ status: 200, last: 'done' });
    const refused = await stream(auth, 'one too many');
    expectJsonError(refused, 429, 'quota_exceeded');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('is 402 insufficient_credits as JSON for a streamed session message too', async () => {
    const { auth } = await stack.fixtures.project({ credits: 1 });
    const session = await fetch(`${stack.api.url}/v1/sessions`, { method: 'POST', headers: auth });
    const { id } = (await session.json()) as { id: string };
    // 1 credit left, and this message may cost 3 (code's surcharge): refused before it runs.
    const res = await readSse(`${stack.api.url}/v1/sessions/${id}/messages`, {
      method: 'POST',
      headers: auth,
      body: { message: 'costly', stream: true, capabilities: ['chat', 'code'] },
    });
    expectJsonError(res, 402, 'insufficient_credits');
  });

  it('still streams a run that fails after its admission, with its error event', async () => {
    const { auth } = await stack.fixtures.project({
      credits: 10,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-test' },
    });
    const res = await stream(auth, 'the model is unreachable');
    expect({ status: res.status, last: res.events.at(-1)?.event }).toEqual({ status: 200, last: 'error' });
  });
});
