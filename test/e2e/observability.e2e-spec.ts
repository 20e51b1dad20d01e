import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { startAppProcess, type AppProcess } from '../support/app-process.js';
import { testConfig } from '../support/config.js';
import { eventually } from '../support/eventually.js';
import { Fixtures } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { sampleSum, scrapeMetrics, type Sample } from '../support/prometheus.js';

// The compiled apps as `npm start` runs them (dist/apps/*/src/main.js, one process each, JSON
// logs), on their own task queue and ports: each app's /metrics answers on its own metrics port
// (the api's not on its public one) and its series move after a request, and no line any app writes carries the project's model key or its API key.
// Its own set-up, not e2eStack: the apps run as processes of their own from dist/ (their logs
// and /metrics are what is tested).
const config = testConfig();
const APPS = ['api', 'worker', 'relay', 'projector'] as const;
type App = (typeof APPS)[number];

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('metrics and logs of the running apps', () => {
  const running = new Map<App, AppProcess>();
  const metricsUrl = new Map<App, string>();
  let fixtures: Fixtures;
  let models: ModelServer;
  let apiUrl: string;
  // Not shaped like `sk-…`, so only the absence of the key itself, not the pattern redaction, passes.
  const modelKey = `mk-${randomBytes(24).toString('hex')}`;

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    models = await startModelServer();
    const ports = {
      PORT: await freePort(),
      API_METRICS_PORT: await freePort(),
      WORKER_METRICS_PORT: await freePort(),
      RELAY_METRICS_PORT: await freePort(),
      PROJECTOR_METRICS_PORT: await freePort(),
      TEMPORAL_SDK_METRICS_PORT: await freePort(),
    };
    apiUrl = `http://127.0.0.1:${ports.PORT}`;
    metricsUrl.set('api', `http://127.0.0.1:${ports.API_METRICS_PORT}/metrics`);
    metricsUrl.set('worker', `http://127.0.0.1:${ports.WORKER_METRICS_PORT}/metrics`);
    metricsUrl.set('relay', `http://127.0.0.1:${ports.RELAY_METRICS_PORT}/metrics`);
    metricsUrl.set('projector', `http://127.0.0.1:${ports.PROJECTOR_METRICS_PORT}/metrics`);
    const env = {
      ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
      PUBLIC_BASE_URL: apiUrl,
      TEMPORAL_TASK_QUEUE: `e2e-observability-${randomUUID()}`,
      RECONCILER_INTERVAL_SECONDS: '0',
      LOG_FORMAT: 'json',
      // Everything any app can say, so that a key in any message would show.
      LOG_LEVEL: 'trace',
    };
    for (const app of APPS) running.set(app, startAppProcess(app, env));
    const started = (app: App, pattern: RegExp) => running.get(app)!.started(pattern);
    await Promise.all([
      started('api', /listening on/),
      started('worker', /polling task queue/),
      started('relay', /relaying the outbox/),
      started('projector', /running projections/),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([...running.values()].map((app) => app.stop()));
    await models?.close();
    await fixtures?.close();
  });

  const scrapeAll = async (): Promise<Record<App, Sample[]>> => {
    const entries = await Promise.all(
      APPS.map(async (app) => [app, (await scrapeMetrics(metricsUrl.get(app)!)).samples] as const),
    );
    return Object.fromEntries(entries) as Record<App, Sample[]>;
  };

  it("serves the api's /metrics on API_METRICS_PORT only, never on its public port", async () => {
    expect((await fetch(`${apiUrl}/metrics`)).status).toBe(404);
    expect((await scrapeMetrics(metricsUrl.get('api')!)).text).toContain('mas_http_request_duration_seconds');
  });

  it('moves each app’s series after requests, and no app logs the model key or the API key', async () => {
    const { auth, key, project } = await fixtures.project({
      credits: 100,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: models.url, apiKey: modelKey },
    });
    const before = await scrapeAll();

    // A run that calls a built-in tool and completes, then one the provider refuses, echoing the key.
    models.reply(
      { toolCalls: [{ name: 'run_javascript', arguments: { code: '6 * 7' } }], usage: { input: 11, output: 5 } },
      { content: 'It is 42.', usage: { input: 20, output: 4 } },
    );
    const ok = await request(apiUrl, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'six times seven?', capabilities: ['code'] },
    });
    expect({ status: ok.status, state: ok.body.status, message: ok.body.message }).toEqual({
      status: 200,
      state: 'completed',
      message: 'It is 42.',
    });
    models.reply({
      status: 401,
      errorMessage: `Incorrect API key provided: ${modelKey}. You can find your API key at https://example.com.`,
    });
    const refused = await request(apiUrl, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'again', capabilities: ['chat'] },
    });
    // A failed first run is answered with the contract's error (502 compute_error), naming the request.
    expect(refused.status).toBe(502);
    expect(JSON.stringify(refused.body)).not.toContain(modelKey);
    expect(models.requests.every((r) => r.headers.authorization === `Bearer ${modelKey}`)).toBe(true);

    const rose = (samples: Record<App, Sample[]>, app: App, name: string, labels: Record<string, string> = {}) =>
      sampleSum(samples[app], name, labels) - sampleSum(before[app], name, labels);
    const after = await eventually(async () => {
      const now = await scrapeAll();
      // The relay publishes the runs' events and the projector applies them on their own time.
      expect(rose(now, 'relay', 'mas_outbox_published_total', { topic: 'mas.usage.v1' })).toBeGreaterThanOrEqual(1);
      expect(rose(now, 'projector', 'mas_projector_events_total', { result: 'applied' })).toBeGreaterThanOrEqual(1);
      return now;
    }, 60_000);

    // api: requests by route and status, with the latency histogram.
    expect(
      rose(after, 'api', 'mas_http_request_duration_seconds_count', {
        method: 'POST',
        route: '/v1/agent',
        status_code: '200',
      }),
    ).toBe(1);
    expect(
      rose(after, 'api', 'mas_http_request_duration_seconds_count', {
        method: 'POST',
        route: '/v1/agent',
        status_code: '502',
      }),
    ).toBe(1);
    expect(
      rose(after, 'api', 'mas_http_request_duration_seconds_bucket', {
        method: 'POST',
        route: '/v1/agent',
        le: '+Inf',
      }),
    ).toBe(2);
    // worker: runs by outcome and capability, model calls, tokens, errors, tool runs, credits.
    expect(rose(after, 'worker', 'mas_agent_requests_total', { outcome: 'completed' })).toBe(1);
    expect(rose(after, 'worker', 'mas_agent_requests_total', { outcome: 'failed' })).toBe(1);
    expect(rose(after, 'worker', 'mas_agent_capability_uses_total', { outcome: 'completed', capability: 'code' })).toBe(
      1,
    );
    expect(rose(after, 'worker', 'mas_model_call_duration_seconds_count', { provider: 'openai', outcome: 'ok' })).toBe(
      2,
    );
    expect(rose(after, 'worker', 'mas_model_tokens_total', { provider: 'openai', type: 'input' })).toBe(31);
    expect(rose(after, 'worker', 'mas_model_tokens_total', { provider: 'openai', type: 'output' })).toBe(9);
    expect(rose(after, 'worker', 'mas_model_call_errors_total', { provider: 'openai' })).toBeGreaterThanOrEqual(1);
    expect(rose(after, 'worker', 'mas_tool_runs_total', { tool: 'run_javascript', outcome: 'ok' })).toBe(1);
    expect(rose(after, 'worker', 'mas_credits_charged_total', { plan: 'pro' })).toBe(
      ok.body.usage.credits_this_request,
    );
    // The Temporal SDK's own metrics, merged into the worker's /metrics.
    expect(after.worker.filter((s) => s.name.startsWith('temporal_')).length).toBeGreaterThan(0);
    expect(rose(after, 'worker', 'temporal_workflow_completed_total')).toBeGreaterThanOrEqual(2);
    // relay and projector: the outbox gauges and the consumer groups' lag are there.
    expect(after.relay.map((s) => s.name)).toEqual(
      expect.arrayContaining(['mas_outbox_pending_rows', 'mas_outbox_oldest_pending_age_seconds']),
    );
    expect(
      after.projector.filter((s) => s.name === 'mas_projector_consumer_lag_messages').map((s) => s.labels.group),
    ).toEqual(expect.arrayContaining([expect.stringMatching(/-projector-/)]));
    for (const app of APPS) expect(after[app].map((s) => s.name)).toContain('process_cpu_seconds_total');

    // Logs: one JSON object a line, the request's ids on its lines, no secret anywhere.
    const all = APPS.flatMap((app) => running.get(app)!.lines.map((line) => ({ app, line })));
    const notJson = all.filter(({ line }) => {
      try {
        return typeof JSON.parse(line) !== 'object';
      } catch {
        return true;
      }
    });
    expect(notJson).toEqual([]);
    const parsed: Record<string, unknown>[] = all.map(({ app, line }) => ({
      ...(JSON.parse(line) as Record<string, unknown>),
      app,
    }));
    expect(
      parsed.filter(
        (l) => l.app === 'api' && l.request_id === ok.body.id && l.project_id === project.id && l.route === '/v1/agent',
      ),
    ).toHaveLength(1);
    expect(
      parsed.filter((l) => l.app === 'worker' && l.workflow_id === `agent-request-${ok.body.id}`).length,
    ).toBeGreaterThan(0);
    for (const secret of [modelKey, key, key.slice('sk-mas_'.length)]) {
      expect(all.filter(({ line }) => line.includes(secret))).toEqual([]);
    }
  }, 120_000);
});
