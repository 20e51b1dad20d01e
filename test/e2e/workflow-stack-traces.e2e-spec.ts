import { randomUUID } from 'node:crypto';
import { agentRequestWorkflowId } from '#libs/contracts';
import { startApi, type RunningApi } from '../support/api.js';
import { startAppProcess, type AppProcess } from '../support/app-process.js';
import { testConfig } from '../support/config.js';
import { Fixtures } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { connectTemporal } from '../support/temporal.js';

// The stack trace query (the Temporal UI's "Stack Trace" tab of a running workflow) shows where a
// request's workflow waits when the worker runs with WORKFLOW_STACK_TRACES=true, and nothing by
// default (the promise hook behind it is costly: apps/worker/src/workflow-promise-hooks.ts). The
// workers run as `npm start` runs them: inside jest's sandbox the SDK cannot see stack traces.
// Its own set-up, not e2eStack: two workers run as processes of their own (one with
// WORKFLOW_STACK_TRACES=true), each with its api.
const config = testConfig();
const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('workflow stack traces', () => {
  const setups = { on: { WORKFLOW_STACK_TRACES: 'true' }, off: {} };
  const running = new Map<keyof typeof setups, { worker: AppProcess; api: RunningApi }>();
  let fixtures: Fixtures;
  let models: ModelServer;

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    models = await startModelServer();
    for (const [name, extra] of Object.entries(setups) as [keyof typeof setups, Record<string, string>][]) {
      const env = {
        TEMPORAL_TASK_QUEUE: `e2e-stack-traces-${name}-${randomUUID()}`,
        RECONCILER_INTERVAL_SECONDS: '0',
        LOG_FORMAT: 'json',
      };
      const worker = startAppProcess('worker', { ...env, ...extra });
      running.set(name, { worker, api: await startApi(env) });
    }
    await Promise.all([...running.values()].map(({ worker }) => worker.started(/polling task queue/)));
  }, 120_000);
  afterAll(async () => {
    await Promise.all([...running.values()].map(async ({ worker, api }) => Promise.all([worker.stop(), api.close()])));
    await models?.close();
    await fixtures?.close();
  });

  /** The stack trace query's answer for a request paused for its tool outputs. */
  async function pausedTrace(setup: keyof typeof setups): Promise<string> {
    const { api } = running.get(setup)!;
    const { auth } = await fixtures.project({
      model: { provider: 'openai', model: 'gpt-test', baseUrl: models.url, apiKey: 'sk-test' },
    });
    models.reply({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] });
    const paused = await request(api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'Weather in Oslo?', tools: [weatherTool] },
    });
    expect(paused.body.status).toBe('requires_tool_outputs');
    const { client, connection } = await connectTemporal(config);
    try {
      return await client.workflow.getHandle(agentRequestWorkflowId(paused.body.id)).query<string>('__stack_trace');
    } finally {
      await request(api.url, 'POST', `/v1/agent/${paused.body.id}/cancel`, { headers: auth });
      await connection.close();
    }
  }

  it('show where a paused request waits, with WORKFLOW_STACK_TRACES=true', async () => {
    expect(await pausedTrace('on')).toMatch(/agent-request\.workflow\.ts/);
  });

  it('are not recorded by default', async () => {
    expect(await pausedTrace('off')).toBe('');
  });
});
