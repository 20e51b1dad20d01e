import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, type Logger as TypeOrmLogger } from 'typeorm';
import { EventStore } from '#libs/events';
import { dataSourceOptions, PgListener } from '#libs/persistence';
import { testConfig } from '../../../test/support/config.js';
import { eventually } from '../../../test/support/eventually.js';
import { AccountsService, API_KEY_CHANNEL } from './accounts.service.js';
import { generateApiKey, hashApiKey } from './secrets.js';

const config = testConfig();

/** One process: its own pool (counting its statements) and its own listener, as an api or a worker has. */
interface Proc {
  readonly db: DataSource;
  readonly listener: PgListener;
  readonly accounts: AccountsService;
  queries: number;
}

async function startProcess(): Promise<Proc> {
  const proc = { queries: 0 } as { -readonly [K in keyof Proc]: Proc[K] };
  const logger: TypeOrmLogger = {
    logQuery: () => void proc.queries++,
    logQueryError: () => undefined,
    logQuerySlow: () => undefined,
    logSchemaBuild: () => undefined,
    logMigration: () => undefined,
    log: () => undefined,
  };
  proc.db = new DataSource({ ...dataSourceOptions(config), logging: ['query'], logger });
  await proc.db.initialize();
  proc.listener = new PgListener(config.databaseUrl);
  proc.accounts = new AccountsService(proc.db, config, new EventStore(), proc.listener);
  return proc;
}

/** Asks until `refused` holds, for at most `boundMs`; the milliseconds it took, or undefined. */
async function until(refused: () => Promise<boolean>, boundMs: number): Promise<number | undefined> {
  const started = Date.now();
  while (Date.now() - started < boundMs) {
    if (await refused()) return Date.now() - started;
    await sleep(5);
  }
  return undefined;
}

/** Whether `proc` now answers `key` from its cache: it asks until a read is a hit. */
async function cachedIn(proc: Proc, key: string): Promise<void> {
  await eventually(async () => {
    const hits = proc.accounts.caches.keys?.stats.hits ?? 0;
    expect(await proc.accounts.authenticateRequest(key)).not.toBeNull();
    expect(proc.accounts.caches.keys?.stats.hits).toBeGreaterThan(hits);
  }, 10_000);
}

/**
 * DESIGN.md section 10 "caches": API keys (the api) and model credentials (the worker) are kept in
 * memory only while a revocation or a rotation reaches every process within 1 s (LISTEN/NOTIFY,
 * migration 1763700000048), and not at all while the listening connection is down. Two processes,
 * each with its own pool and listener, against the real PostgreSQL; the writer is the operator's
 * (no cache, no code of its own to invalidate: the triggers notify).
 */
describe('caches of API keys and model credentials', () => {
  let a: Proc;
  let b: Proc;
  let operator: AccountsService;
  let operatorDb: DataSource;
  /** How long a test waits for every process to refuse: the design's bound is 1 s; the wait is
   * longer so a loaded machine does not fail it, while the 5 minutes of the TTL would. */
  const WAIT_MS = 5000;

  beforeAll(async () => {
    [a, b] = await Promise.all([startProcess(), startProcess()]);
    operatorDb = new DataSource({ ...dataSourceOptions(config), logging: false });
    await operatorDb.initialize();
    operator = new AccountsService(operatorDb, config, new EventStore());
  });
  afterAll(async () => {
    for (const proc of [a, b]) {
      proc?.accounts.closeCaches();
      await proc?.listener.stop();
      await proc?.db.destroy();
    }
    await operatorDb?.destroy();
  });

  const newProject = () => operator.createProject({ name: `caches-${randomUUID()}`, plan: 'pro' });

  it('refuses a key revoked while requests run, in every process, and costs one statement a request', async () => {
    const project = await newProject();
    const { key, record } = await operator.createApiKey(project.id);
    await Promise.all([cachedIn(a, key), cachedIn(b, key)]);

    // A cached key still costs the request one statement: its project's figures and its hit on the
    // rate limit are shared by every replica (the statement no longer reads api_keys).
    const before = a.queries;
    const found = await a.accounts.authenticateRequest(key);
    expect(a.queries - before).toBe(1);
    expect(found).toMatchObject({
      principal: { keyId: record.id, project: { id: project.id } },
      hits: { count: expect.any(Number) },
    });

    // Requests keep coming on both processes while the operator revokes the key.
    let running = true;
    const refusedAt: (number | undefined)[] = [undefined, undefined];
    const traffic = [a, b].map(async (proc, i) => {
      while (running && refusedAt[i] === undefined) {
        if ((await proc.accounts.authenticateRequest(key)) === null) refusedAt[i] = Date.now();
      }
    });
    await sleep(50);
    const revokedAt = Date.now();
    await operator.revokeApiKey(record.id);
    await until(async () => refusedAt.every((t) => t !== undefined), WAIT_MS);
    running = false;
    await Promise.all(traffic);
    expect(refusedAt.map((t) => t !== undefined)).toEqual([true, true]);
    expect(refusedAt.every((t) => t! - revokedAt < WAIT_MS)).toBe(true);
    // And it stays refused.
    expect(await a.accounts.authenticateRequest(key)).toBeNull();
    expect(await b.accounts.authenticateRequest(key)).toBeNull();
  });

  it('accepts a key issued after the same key was refused (misses are not kept)', async () => {
    const project = await newProject();
    const key = generateApiKey();
    expect(await a.accounts.authenticateRequest(key)).toBeNull();
    await operatorDb.query(`insert into api_keys (id, project_id, key_hash, prefix) values ($1, $2, $3, 'mas_test')`, [
      randomUUID(),
      project.id,
      hashApiKey(key, config.apiKeyPepper),
    ]);
    expect((await a.accounts.authenticateRequest(key))?.principal.project.id).toBe(project.id);
  });

  it('hands every process the rotated model key at its next call, from memory until then', async () => {
    const project = await newProject();
    await operator.setModel(project.id, { provider: 'openai', model: 'gpt-test', apiKey: 'sk-before-rotation' });
    for (const proc of [a, b]) {
      await eventually(async () => {
        const hits = proc.accounts.caches.models?.stats.hits ?? 0;
        expect((await proc.accounts.modelCredentials(project.id))?.apiKey).toBe('sk-before-rotation');
        expect(proc.accounts.caches.models?.stats.hits).toBeGreaterThan(hits);
      }, 10_000);
    }
    // A credential from memory costs no statement.
    const before = a.queries;
    expect((await a.accounts.modelCredentials(project.id))?.apiKey).toBe('sk-before-rotation');
    expect(a.queries).toBe(before);

    await operator.setModel(project.id, { provider: 'openai', model: 'gpt-test', apiKey: 'sk-after-rotation' });
    for (const proc of [a, b]) {
      expect(
        await until(
          async () => (await proc.accounts.modelCredentials(project.id))?.apiKey === 'sk-after-rotation',
          WAIT_MS,
        ),
      ).toBeDefined();
    }
  });

  it('drops the cache when its listening connection is cut, reads PostgreSQL until it is back, then hears revocations again', async () => {
    const project = await newProject();
    const { key } = await operator.createApiKey(project.id);
    const second = await operator.createApiKey(project.id);
    await operator.setModel(project.id, { provider: 'openai', model: 'gpt-test', apiKey: 'sk-model' });
    await cachedIn(a, key);
    expect(await a.accounts.modelCredentials(project.id)).not.toBeNull();
    const keys = a.accounts.caches.keys!;
    const models = a.accounts.caches.models!;
    expect(keys.size).toBeGreaterThan(0);

    await cachedIn(a, second.key);
    // What the caches hold once the process heard the drop (every subscriber is told in the same turn).
    const atDrop: { active: boolean; keys: number; models: number }[] = [];
    const unsubscribe = a.listener.subscribe(API_KEY_CHANNEL, {
      notify: () => undefined,
      up: () => undefined,
      down: () => queueMicrotask(() => atDrop.push({ active: keys.active, keys: keys.size, models: models.size })),
    });
    const pid = a.listener.backendPid;
    await operatorDb.query('select pg_terminate_backend($1)', [pid]);
    await eventually(async () => expect(atDrop).toEqual([{ active: false, keys: 0, models: 0 }]), 10_000);
    unsubscribe();
    // A key revoked around the cut (its notification may be lost) is refused: nothing kept before the cut is used.
    await operator.revokeApiKey(second.record.id);
    expect(await a.accounts.authenticateRequest(second.key)).toBeNull();

    // Back on a connection of its own, it starts empty and hears revocations again.
    await eventually(async () => expect(keys.active && models.active).toBe(true), 15_000);
    expect(a.listener.backendPid).not.toBe(pid);
    await cachedIn(a, key);
    await operator.revokeApiKey((await operator.listApiKeys(project.id)).find((k) => !k.revokedAt)!.id);
    expect(await until(async () => (await a.accounts.authenticateRequest(key)) === null, WAIT_MS)).toBeDefined();
  });
});
