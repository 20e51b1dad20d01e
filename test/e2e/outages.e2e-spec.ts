import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApi, type RunningApi } from '../support/api.js';
import { testConfig } from '../support/config.js';
import { Fixtures } from '../support/fixtures.js';
import { e2eStack } from '../support/e2e-stack.js';
import { request, type JsonResponse } from '../support/http.js';
import { stack } from '../support/stack.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { APP_CLOSE_TIMEOUT_MS, APP_START_TIMEOUT_MS, startWorker, type RunningWorker } from '../support/worker.js';

// What a client sees while a component the api depends on is down, and that the api heals by
// itself once it is back. Outages here are short: other tests share the stack.
// The first and last blocks keep their own set-up, not e2eStack: an api that reaches PostgreSQL
// through a TCP proxy made in beforeAll (the worker not), and an api with no worker at all.
const config = testConfig();
const env = { TEMPORAL_TASK_QUEUE: `e2e-outages-${randomUUID()}` };

function expectUnavailable(res: JsonResponse): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 503, code: 'service_unavailable' });
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(res.body.error.docs).toBe(`${config.publicBaseUrl}/docs/errors#service_unavailable`);
}

describe('PostgreSQL unreachable', () => {
  let api: RunningApi;
  let worker: RunningWorker;
  let fixtures: Fixtures;
  let proxy: TcpProxy;

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    const url = new URL(config.databaseUrl);
    proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
    url.port = String(proxy.port);
    worker = await startWorker(env);
    // The api reaches PostgreSQL only through the proxy, so cutting it is PostgreSQL going away.
    api = await startApi({ ...env, DATABASE_URL: url.toString() });
  }, APP_START_TIMEOUT_MS);
  afterAll(async () => {
    await api?.close();
    await worker?.close();
    await proxy?.close();
    await fixtures?.close();
  }, APP_CLOSE_TIMEOUT_MS);

  it('answers 503 service_unavailable with Retry-After, from the key lookup on, and heals when it is back', async () => {
    const { auth } = await fixtures.project();
    const ok = await request(api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'before' } });
    expect(ok.status).toBe(200);
    await proxy.cut();
    try {
      // The very first query of a request (the API key) fails: every endpoint answers 503.
      expectUnavailable(await request(api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'during' } }));
      expectUnavailable(await request(api.url, 'GET', `/v1/agent/${String(ok.body.id)}`, { headers: auth }));
      expectUnavailable(await request(api.url, 'POST', '/v1/sessions', { headers: auth, body: {} }));
      // Unauthenticated routes that need no database still answer.
      expect((await request(api.url, 'GET', '/healthz')).status).toBe(200);
    } finally {
      await proxy.restore();
    }
    const after = await request(api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'after' } });
    expect(after.status).toBe(200);
  });
});

describe('Temporal restarted', () => {
  const apps = e2eStack({ name: 'outages-temporal' });

  it('answers 502 compute_unavailable with X-Request-Id while it is down, and 200 from the first request once it serves again', async () => {
    const { auth } = await apps.fixtures.project({ credits: 1000 });
    expect(
      (await request(apps.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'before' } })).status,
    ).toBe(200);
    // A client that keeps trying through the outage and the restart, as real clients do (each try
    // also makes the api's gRPC channel back off further): every answer is a 502 that names the
    // request, never a hang or a 500.
    const during: JsonResponse[] = [];
    let restarted = false;
    let clientEnded = false;
    await stack('stop', 'temporal');
    const client = (async () => {
      try {
        while (!restarted || during.length < 7) {
          during.push(
            await request(apps.api.url, 'POST', '/v1/agent', {
              headers: auth,
              body: { message: `during ${during.length}` },
            }),
          );
        }
      } finally {
        clientEnded = true;
      }
    })();
    try {
      while (during.length < 7 && !clientEnded) await sleep(200);
    } finally {
      await stack('start', 'temporal');
      restarted = true;
      await client;
    }
    for (const res of during.filter((r) => r.status !== 200)) {
      expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 502, code: 'compute_unavailable' });
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
    // stack.sh start returns once Temporal reports SERVING: the api's next request goes through.
    const after = await request(apps.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'after' } });
    expect({ status: after.status, code: after.body?.error?.code }).toEqual({ status: 200, code: undefined });
  });
});

describe('no worker', () => {
  const queue = { TEMPORAL_TASK_QUEUE: `e2e-outages-noworker-${randomUUID()}`, AGENT_PICKUP_TIMEOUT_MS: '2000' };
  const weather = {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  };
  let api: RunningApi;
  let fixtures: Fixtures;

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    api = await startApi(queue);
  });
  afterAll(async () => {
    await api.close();
    await fixtures.close();
  });

  /** A POST that a test gives up on rather than hang with it: a hang shows as an abort, not a pass. */
  async function postOrGiveUp(path: string, headers: Record<string, string>, body: unknown): Promise<JsonResponse> {
    const res = await fetch(`${api.url}${path}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    return { status: res.status, headers: res.headers, body: await res.json() };
  }

  it('tool outputs answer 502 compute_unavailable with X-Request-Id instead of hanging, and the same submission goes through once a worker is back', async () => {
    const { auth } = await fixtures.project({ credits: 10 });
    let worker = await startWorker(queue);
    let first: JsonResponse;
    try {
      first = await postOrGiveUp('/v1/agent', auth, { message: 'use get_weather {"city":"Oslo"}', tools: [weather] });
      expect(first.body.status).toBe('requires_tool_outputs');
    } finally {
      await worker.close();
    }
    const submission = {
      tool_outputs: [{ tool_call_id: first.body.tool_calls[0].id, output: 'Sunny' }],
      _compute_instance: first.body._compute_instance,
    };
    const refused = await postOrGiveUp(`/v1/agent/${String(first.body.id)}/tool-outputs`, auth, submission);
    expect({ status: refused.status, code: refused.body?.error?.code }).toEqual({
      status: 502,
      code: 'compute_unavailable',
    });
    expect(refused.headers.get('x-request-id')).toBe(first.body.id);

    worker = await startWorker(queue);
    try {
      const resumed = await postOrGiveUp(`/v1/agent/${String(first.body.id)}/tool-outputs`, auth, submission);
      expect({ status: resumed.status, state: resumed.body.status }).toEqual({ status: 200, state: 'completed' });
    } finally {
      await worker.close();
    }
  });
});
