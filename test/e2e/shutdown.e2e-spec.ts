import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { drainAndClose } from '../../apps/api/src/app.js';
import { startApi, type RunningApi } from '../support/api.js';
import { testConfig } from '../support/config.js';
import { Fixtures } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { APP_CLOSE_TIMEOUT_MS, startWorker, type RunningWorker } from '../support/worker.js';

// What SIGTERM does to the api (apps/api/src/main.ts calls drainAndClose on it).
// Its own set-up, not e2eStack: the test stops the api itself (drainAndClose), which the stack
// would close a second time.
const config = testConfig();
const env = { TEMPORAL_TASK_QUEUE: `e2e-shutdown-${randomUUID()}` };

describe('the api stopping', () => {
  let api: RunningApi;
  let worker: RunningWorker;
  let fixtures: Fixtures;
  let models: ModelServer;

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    models = await startModelServer();
    worker = await startWorker(env);
    api = await startApi(env);
  });
  afterAll(async () => {
    await worker.close();
    await models.close();
    await fixtures.close();
  }, APP_CLOSE_TIMEOUT_MS);

  it('finishes a request in flight with 200, and takes no new one', async () => {
    const { auth, project } = await fixtures.project({
      credits: 10,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: models.url, apiKey: 'sk-test' },
    });
    models.reply({ content: 'slow but sure', delayMs: 3000 });
    const calls = models.requests.length;
    // With a key, the answer is saved in PostgreSQL after the run: the pool must outlive the request.
    const inFlight = request(api.url, 'POST', '/v1/agent', {
      headers: { ...auth, 'idempotency-key': 'slow-1' },
      body: { message: 'take your time', capabilities: ['chat'] },
    });
    while (models.requests.length === calls) await sleep(50);
    // The model is answering: stop the api now.
    const stopped = drainAndClose(api.app);
    const res = await inFlight;
    expect({ status: res.status, state: res.body.status, message: res.body.message }).toEqual({
      status: 200,
      state: 'completed',
      message: 'slow but sure',
    });
    await expect(fetch(`${api.url}/healthz`)).rejects.toThrow();
    await stopped;
    const saved: unknown[] = await fixtures.db.query(
      `select 1 from idempotency_keys where project_id = $1 and key = 'slow-1' and (response->>'status')::int = 200`,
      [project.id],
    );
    expect(saved).toHaveLength(1);
  });
});
