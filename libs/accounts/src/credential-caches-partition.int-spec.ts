import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { EventStore } from '#libs/events';
import { dataSourceOptions, PgListener } from '#libs/persistence';
import { testConfig } from '../../../test/support/config.js';
import { eventually } from '../../../test/support/eventually.js';
import { startTcpProxy, type TcpProxy } from '../../../test/support/tcp-proxy.js';
import { AccountsService } from './accounts.service.js';

const config = testConfig();

/**
 * Issue 44, defect 6: DESIGN.md section 10 "caches" keeps API keys and model credentials in memory
 * only while a revocation or a rotation reaches the process within 1 s. A listening connection that
 * goes silent without a reset (a partition, a middlebox that forgot it) hears nothing and reports no
 * error: the caches must stop being trusted anyway. The process's listener reaches the real
 * PostgreSQL through a loopback proxy that blackholes it (bytes held both ways, no socket closed);
 * its pool and the operator's go directly, so the revocation commits and a read can see it.
 */
describe('caches of API keys and model credentials, listening connection silently dead', () => {
  let proxy: TcpProxy;
  let db: DataSource;
  let listener: PgListener;
  let accounts: AccountsService;
  let operatorDb: DataSource;
  let operator: AccountsService;
  /** How long after the write the stale value must be gone: the design's 1 s, with room for a
   * loaded machine, and far from the 5 minutes of the TTL that served it before. */
  const BOUND_MS = 1500;

  beforeAll(async () => {
    const url = new URL(config.databaseUrl);
    proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
    url.port = String(proxy.port);
    db = new DataSource({ ...dataSourceOptions(config), logging: false });
    operatorDb = new DataSource({ ...dataSourceOptions(config), logging: false });
    await Promise.all([db.initialize(), operatorDb.initialize()]);
    listener = new PgListener(url.toString());
    accounts = new AccountsService(db, config, new EventStore(), listener);
    operator = new AccountsService(operatorDb, config, new EventStore());
  });
  afterEach(async () => {
    await proxy.restore();
  });
  afterAll(async () => {
    accounts?.closeCaches();
    await listener?.stop();
    await proxy?.close();
    await db?.destroy();
    await operatorDb?.destroy();
  });

  const newProject = () => operator.createProject({ name: `partition-${randomUUID()}`, plan: 'pro' });

  /** Until a read of `key` is answered from the cache. */
  async function cached(key: string): Promise<void> {
    await eventually(async () => {
      const hits = accounts.caches.keys?.stats.hits ?? 0;
      expect(await accounts.authenticateRequest(key)).not.toBeNull();
      expect(accounts.caches.keys?.stats.hits).toBeGreaterThan(hits);
    }, 10_000);
  }

  it('refuses a key revoked while the listening connection is blackholed', async () => {
    const project = await newProject();
    const { key, record } = await operator.createApiKey(project.id);
    await cached(key);

    proxy.blackhole();
    await operator.revokeApiKey(record.id);
    await sleep(BOUND_MS);
    expect(await accounts.authenticateRequest(key)).toBeNull();
  });

  it('hands out the rotated model key while the listening connection is blackholed', async () => {
    const project = await newProject();
    await operator.setModel(project.id, { provider: 'openai', model: 'gpt-test', apiKey: 'sk-before-partition' });
    await eventually(async () => {
      const hits = accounts.caches.models?.stats.hits ?? 0;
      expect((await accounts.modelCredentials(project.id))?.apiKey).toBe('sk-before-partition');
      expect(accounts.caches.models?.stats.hits).toBeGreaterThan(hits);
    }, 10_000);

    proxy.blackhole();
    await operator.setModel(project.id, { provider: 'openai', model: 'gpt-test', apiKey: 'sk-after-partition' });
    await sleep(BOUND_MS);
    expect((await accounts.modelCredentials(project.id))?.apiKey).toBe('sk-after-partition');
  });

  it('caches again once the network is back, on a new connection, and hears revocations there', async () => {
    const project = await newProject();
    const { key } = await operator.createApiKey(project.id);
    const second = await operator.createApiKey(project.id);
    await cached(key);
    const pid = listener.backendPid;

    proxy.blackhole();
    await eventually(async () => expect(accounts.caches.keys?.active).toBe(false), 5000);
    await proxy.restore();

    await eventually(async () => expect(accounts.caches.keys?.active).toBe(true), 15_000);
    expect(listener.backendPid).not.toBe(pid);
    await cached(second.key);
    await operator.revokeApiKey(second.record.id);
    await eventually(async () => expect(await accounts.authenticateRequest(second.key)).toBeNull(), BOUND_MS);
  });
});
