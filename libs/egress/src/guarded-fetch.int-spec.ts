import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { HostAllowList, type ResolvedAddress } from './address.policy.js';
import { DestinationRefused } from './destination.js';
import { guardedFetch, type GuardedFetchOptions } from './guarded-fetch.js';

// The guarded fetch over real sockets on loopback: what it refuses never connects, what it allows
// connects only to the addresses that were checked, and kept connections are reused only for the
// same checked addresses.

function allowList(entries: string[]): HostAllowList {
  const list = HostAllowList.parse(entries);
  if (!(list instanceof HostAllowList)) throw new Error(list.error);
  return list;
}

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });

describe('guardedFetch against a server on loopback', () => {
  let server: Server;
  let port: number;
  let connections: number;
  const sockets = new Set<Socket>();

  beforeEach(async () => {
    connections = 0;
    server = createServer((req, res) => {
      if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
        return res.end();
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`hello ${req.method} ${req.headers['authorization'] ?? ''}`);
    });
    server.on('connection', (socket: Socket) => {
      connections++;
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterEach(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const fetchWith = (options: Partial<GuardedFetchOptions>) =>
    guardedFetch({
      allow: allowList([]),
      resolve: () => Promise.reject(new Error('no DNS in this test')),
      maxBytes: 1024,
      what: (url) => `reach ${url.origin}`,
      policyNote: 'Only public addresses.',
      ...options,
    });

  it('refuses a loopback address that is not allowed, before any connection', async () => {
    const fetch = fetchWith({});
    const refused = fetch(`http://127.0.0.1:${port}/`, { headers: { authorization: 'Bearer secret' } });
    await expect(refused).rejects.toThrow(
      new DestinationRefused(
        `Refused to reach http://127.0.0.1:${port}: 127.0.0.1 is a loopback address. Only public addresses.`,
      ),
    );
    expect(connections).toBe(0);
  });

  it('connects only to the checked address of a name (no second lookup), and returns a redirect unfollowed', async () => {
    const fetch = fetchWith({ allow: allowList(['model.test']), resolve: () => Promise.resolve([v4('127.0.0.1')]) });
    const res = await fetch(`http://model.test:${port}/`, { method: 'POST', body: '{}' });
    await expect(res.text()).resolves.toBe('hello POST ');
    const redirect = await fetch(`http://model.test:${port}/redirect`);
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('http://169.254.169.254/latest/meta-data/');
  });

  it('keeps a connection for the same checked addresses only', async () => {
    let answer = [v4('127.0.0.1')];
    const resolve = () => Promise.resolve(answer);
    const pooled = fetchWith({ allow: allowList(['pooled.test']), resolve, keepAlive: true });
    for (let i = 0; i < 3; i++) await (await pooled(`http://pooled.test:${port}/`)).text();
    expect(connections).toBe(1);

    // The name now resolves elsewhere (127.0.0.2, where nothing listens): the kept connection to
    // 127.0.0.1 is not used for it.
    answer = [v4('127.0.0.2')];
    await expect(pooled(`http://pooled.test:${port}/`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(connections).toBe(1);

    const unpooled = fetchWith({ allow: allowList(['127.0.0.1']) });
    for (let i = 0; i < 2; i++) await (await unpooled(`http://127.0.0.1:${port}/`)).text();
    expect(connections).toBe(3);
  });
});
