import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { testConfig } from '../../../test/support/config.js';
import { eventually } from '../../../test/support/eventually.js';
import { startTcpProxy, type TcpProxy } from '../../../test/support/tcp-proxy.js';
import { PgListener, type ChannelSubscriber } from './pg-listener.js';

const config = testConfig();
const CHANNEL = 'mas_test_listener';

/** What a subscriber heard, in order, with when. */
function recorder(): ChannelSubscriber & { heard: { what: string; at: number }[] } {
  const heard: { what: string; at: number }[] = [];
  const push = (what: string) => heard.push({ what, at: Date.now() });
  return { heard, notify: (p) => push(`notify ${p}`), down: () => push('down'), up: () => push('up') };
}

/**
 * Issue 44, defect 6: the process's listener over a connection that goes silent without a reset (a
 * partition, a middlebox that forgot it). The listener reaches the real PostgreSQL through a
 * loopback proxy that blackholes it: every byte held both ways, no socket closed, so nothing but
 * the listener's own heartbeat can tell.
 */
describe('PgListener over a silently dead connection', () => {
  let proxy: TcpProxy;
  let url: string;
  let notifier: pg.Client;
  const listeners: PgListener[] = [];

  beforeAll(async () => {
    const target = new URL(config.databaseUrl);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    target.port = String(proxy.port);
    url = target.toString();
    notifier = new pg.Client({ connectionString: config.databaseUrl });
    await notifier.connect();
  });
  afterEach(async () => {
    await proxy.restore();
    await Promise.all(listeners.splice(0).map((l) => l.stop()));
  });
  afterAll(async () => {
    await notifier?.end();
    await proxy?.close();
  });

  const listenerOf = (): PgListener => {
    const listener = new PgListener(url);
    listeners.push(listener);
    return listener;
  };

  it('tells its subscribers `down` within a second of the connection going silent, and `up` on a new one once the network is back', async () => {
    const listener = listenerOf();
    const subscriber = recorder();
    listener.subscribe(CHANNEL, subscriber);
    await eventually(async () => expect(subscriber.heard.map((h) => h.what)).toEqual(['up']), 10_000);
    const pid = listener.backendPid;

    const silentAt = Date.now();
    proxy.blackhole();
    await eventually(async () => expect(subscriber.heard.map((h) => h.what)).toContain('down'), 5000);
    // The design's 1 s, with room for a loaded machine.
    expect(subscriber.heard.find((h) => h.what === 'down')!.at - silentAt).toBeLessThan(1500);
    expect(listener.listening(CHANNEL)).toBe(false);

    await proxy.restore();
    await eventually(async () => expect(subscriber.heard.map((h) => h.what)).toEqual(['up', 'down', 'up']), 15_000);
    expect(listener.backendPid).not.toBe(pid);
    await notifier.query(`select pg_notify($1, 'after')`, [CHANNEL]);
    await eventually(async () => expect(subscriber.heard.map((h) => h.what)).toContain('notify after'), 5000);
  });

  it('gives up a start over a network that answers nothing, rather than waiting on it forever, and listens once it is back', async () => {
    proxy.blackhole();
    const listener = listenerOf();
    const subscriber = recorder();
    listener.subscribe(CHANNEL, subscriber);
    const outcome = await Promise.race([
      listener.start().then(
        () => 'started',
        () => 'failed',
      ),
      sleep(15_000).then(() => 'still waiting'),
    ]);
    expect(outcome).toBe('failed');
    expect(listener.listening()).toBe(false);

    await proxy.restore();
    await eventually(async () => expect(subscriber.heard.map((h) => h.what)).toEqual(['up']), 20_000);
  });
});
