import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { metricsRegistry } from '#libs/observability';
import { startApi, type RunningApi } from '../support/api.js';
import { testConfig } from '../support/config.js';
import { Fixtures } from '../support/fixtures.js';
import { eventually } from '../support/eventually.js';
import type { JsonResponse } from '../support/http.js';
import { startWorker } from '../support/worker.js';

// A run whose workflow task fails on every worker (here: a worker whose workflow code has one more
// step than the code that started the run, as after a deploy without patched()) cannot make
// progress. The caller's 502 says so and why, GET shows it, and the api counts it; once a worker
// that can run it is back, the same submission goes through.
// Its own set-up, not e2eStack: the test stops and starts workers itself (one with a workflow
// interceptor that adds a step), on a queue with a short pickup timeout.
const config = testConfig();
const queue = { TEMPORAL_TASK_QUEUE: `e2e-failing-task-${randomUUID()}`, AGENT_PICKUP_TIMEOUT_MS: '2000' };
const weather = {
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const deployedStep = fileURLToPath(new URL('../fixtures/deployed-step.interceptors.ts', import.meta.url));
const FAILING =
  /cannot make progress: its workflow task has failed \d+ times? in a row on the agent workers \(the workers' workflow code does not replay the run's history \(non-determinism/;

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

/** A call that a test gives up on rather than hang with it: a hang shows as an abort, not a pass. */
async function call(
  method: 'GET' | 'POST',
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<JsonResponse> {
  const res = await fetch(`${api.url}${path}`, {
    method,
    headers: { ...headers, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(90_000),
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

it('tool outputs to a run whose workflow task keeps failing: 502 naming the cause, GET shows it, a metric counts it; the run goes on once a worker can run it', async () => {
  const { auth } = await fixtures.project({ credits: 10 });
  let worker = await startWorker(queue);
  let paused: JsonResponse;
  try {
    paused = await call('POST', '/v1/agent', auth, { message: 'use get_weather {"city":"Oslo"}', tools: [weather] });
    expect(paused.body.status).toBe('requires_tool_outputs');
  } finally {
    await worker.close();
  }
  const id = String(paused.body.id);
  const submission = {
    tool_outputs: [{ tool_call_id: paused.body.tool_calls[0].id, output: 'Sunny' }],
    _compute_instance: paused.body._compute_instance,
  };

  worker = await startWorker(queue, { workflowInterceptorModules: [deployedStep] });
  try {
    const refused = await call('POST', `/v1/agent/${id}/tool-outputs`, auth, submission);
    expect({ status: refused.status, code: refused.body?.error?.code }).toEqual({
      status: 502,
      code: 'compute_unavailable',
    });
    expect(refused.body.error.message).toMatch(FAILING);
    expect(refused.headers.get('x-request-id')).toBe(id);

    const read = await call('GET', `/v1/agent/${id}`, auth);
    expect({ status: read.status, state: read.body.status, code: read.body.error?.code }).toEqual({
      status: 200,
      state: 'requires_tool_outputs',
      code: 'compute_unavailable',
    });
    expect(read.body.error.message).toMatch(FAILING);

    const metrics = await metricsRegistry.getSingleMetricAsString('mas_workflow_task_failing_total');
    expect(metrics).toMatch(
      /mas_workflow_task_failing_total\{workflow_type="agentRequestWorkflow",cause="non_deterministic_error"\} [1-9]/,
    );
  } finally {
    await worker.close();
  }

  worker = await startWorker(queue);
  try {
    // Temporal retries the failed task after a backoff: until then the run is still failing, and
    // a client retrying the same submission gets the same 502; then the run goes on.
    const resumed = await eventually(async () => {
      const res = await call('POST', `/v1/agent/${id}/tool-outputs`, auth, submission);
      if (res.status === 502) expect(res.body.error.message).toMatch(FAILING);
      expect({ status: res.status, state: res.body.status }).toEqual({ status: 200, state: 'completed' });
      return res;
    }, 120_000);
    expect(resumed.body.message).toBeTruthy();
    const read = await call('GET', `/v1/agent/${id}`, auth);
    expect({ state: read.body.status, error: read.body.error }).toEqual({ state: 'completed', error: undefined });
  } finally {
    await worker.close();
  }
}, 300_000);
