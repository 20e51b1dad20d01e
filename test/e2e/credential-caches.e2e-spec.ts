import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AccountsService } from '#libs/accounts';
import { startApi, type RunningApi } from '../support/api.js';
import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { request } from '../support/http.js';

/** How long a test waits for every process: the design's bound is 1 s; a loaded machine gets more,
 * the caches' 5-minute TTL does not. */
const WAIT_MS = 5000;

/**
 * DESIGN.md section 10 "caches", end to end: two apis (each its own listener and key cache) and the
 * worker (its model-credential cache), while the operator revokes a key and rotates a model key
 * through the service the CLI uses; then the same after every listening connection was cut.
 */
describe('cached API keys and model credentials', () => {
  const stack = e2eStack({ name: 'credential-caches' });
  let second: RunningApi;
  beforeAll(async () => {
    second = await startApi(stack.env);
  });
  afterAll(async () => {
    await second?.close();
  });

  const apis = () => [stack.api, second];

  /** 401 once the key is refused; anything else (404 for an unknown request, 429) means accepted. */
  const status = async (api: RunningApi, key: string) =>
    (await request(api.url, 'GET', `/v1/agent/${randomUUID()}`, { headers: { authorization: `Bearer ${key}` } }))
      .status;

  /** Each api answers `key` from its cache (a request after one that filled it is a hit). */
  async function cachedInEveryApi(key: string): Promise<void> {
    for (const api of apis()) {
      const accounts = api.app.get(AccountsService, { strict: false });
      await eventually(async () => {
        const hits = accounts.caches.keys?.stats.hits ?? 0;
        expect(await status(api, key)).toBe(404);
        expect(accounts.caches.keys?.stats.hits).toBeGreaterThan(hits);
      }, 10_000);
    }
  }

  /** Requests on every api until each says 401; whether each did within WAIT_MS. */
  async function refusedEverywhere(key: string, revoke: () => Promise<unknown>): Promise<boolean[]> {
    const refused = [false, false];
    let stop = false;
    const traffic = apis().map(async (api, i) => {
      while (!stop && !refused[i]) {
        if ((await status(api, key)) === 401) refused[i] = true;
        else await sleep(10);
      }
    });
    await sleep(50);
    await revoke();
    const deadline = Date.now() + WAIT_MS;
    while (Date.now() < deadline && !refused.every(Boolean)) await sleep(10);
    stop = true;
    await Promise.all(traffic);
    return refused;
  }

  /** Runs requests until the model server saw `modelKey` (the next call after a rotation). */
  async function modelSees(auth: { authorization: string }, modelKey: string): Promise<boolean> {
    const deadline = Date.now() + WAIT_MS;
    while (Date.now() < deadline) {
      stack.models.reply({ content: 'ok' });
      const res = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'hi' } });
      expect(res.status).toBe(200);
      const seen = stack.models.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)
        ?.headers.authorization;
      if (seen === `Bearer ${modelKey}`) return true;
    }
    return false;
  }

  /** Runs requests until the worker's model call took the credentials from its cache. */
  async function modelCachedInWorker(auth: { authorization: string }): Promise<void> {
    const models = () => stack.worker.app.get(AccountsService, { strict: false }).caches.models;
    await eventually(async () => {
      const hits = models()?.stats.hits ?? 0;
      stack.models.reply({ content: 'ok' });
      expect(
        (await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'hi' } })).status,
      ).toBe(200);
      expect(models()?.stats.hits).toBeGreaterThan(hits);
    }, 10_000);
  }

  /** Rotates the project's model key through the operator's service. */
  const rotate = (projectId: string, apiKey: string) =>
    stack.fixtures.accounts.setModel(projectId, {
      provider: 'openai',
      model: 'gpt-test',
      baseUrl: stack.models.url,
      apiKey,
    });

  it('refuses a revoked key on every api, and calls the model with a rotated key', async () => {
    const { project, key, auth } = await stack.fixtures.project({
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-model-first' },
    });
    expect(await modelSees(auth, 'sk-model-first')).toBe(true);
    await modelCachedInWorker(auth);
    await rotate(project.id, 'sk-model-second');
    expect(await modelSees(auth, 'sk-model-second')).toBe(true);

    await cachedInEveryApi(key);
    const [record] = await stack.fixtures.accounts.listApiKeys(project.id);
    expect(await refusedEverywhere(key, () => stack.fixtures.accounts.revokeApiKey(record!.id))).toEqual([true, true]);
  });

  it('drops the caches when the listening connections are cut, and hears revocations and rotations once they are back', async () => {
    const { project, key, auth } = await stack.fixtures.project({
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-model-before-cut' },
    });
    expect(await modelSees(auth, 'sk-model-before-cut')).toBe(true);
    await modelCachedInWorker(auth);
    await cachedInEveryApi(key);
    const db = stack.fixtures.db;
    const listeners = async () =>
      (
        (await db.query(
          `select pid from pg_stat_activity where datname = current_database() and application_name = 'mas-listener'`,
        )) as { pid: number }[]
      ).map((r) => r.pid);
    const before = await listeners();
    // Two apis and the worker.
    expect(before.length).toBeGreaterThanOrEqual(3);
    await db.query(`select pg_terminate_backend(pid) from unnest($1::int[]) pid`, [before]);
    for (const api of apis())
      await eventually(
        async () => expect(api.app.get(AccountsService, { strict: false }).caches.keys?.size).toBe(0),
        10_000,
      );
    await eventually(
      async () => expect(stack.worker.app.get(AccountsService, { strict: false }).caches.models?.size).toBe(0),
      10_000,
    );
    // Every process listens again, on connections of their own.
    await eventually(
      async () => expect((await listeners()).filter((pid) => !before.includes(pid)).length).toBe(before.length),
      15_000,
    );

    await modelCachedInWorker(auth);
    await rotate(project.id, 'sk-model-after-cut');
    expect(await modelSees(auth, 'sk-model-after-cut')).toBe(true);
    await cachedInEveryApi(key);
    const [record] = await stack.fixtures.accounts.listApiKeys(project.id);
    expect(await refusedEverywhere(key, () => stack.fixtures.accounts.revokeApiKey(record!.id))).toEqual([true, true]);
  });
});
