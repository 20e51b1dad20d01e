import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** A loopback TCP proxy in front of a real server (PostgreSQL in the outage tests): `cut()` closes
 * every connection and refuses new ones, as a server that went away does; `blackhole()` stops
 * forwarding bytes both ways without closing anything (new connections are accepted and hear
 * nothing), as a network partition or a middlebox that dropped its state without a reset does;
 * `restore()` forwards again (on the same port after a cut; on the same connections, with the bytes
 * held meanwhile, after a blackhole). */
export interface TcpProxy {
  readonly port: number;
  cut(): Promise<void>;
  blackhole(): void;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let blackholed = false;
  let listening = false;
  const track = (s: Socket): void => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };
  // Unpiping pauses the source: what it receives stays in its buffers and the kernel's, unread and
  // unacknowledged past the window, and goes on at the next pipe.
  const forward = (pair: { client: Socket; upstream: Socket }): void =>
    void pair.client.pipe(pair.upstream).pipe(pair.client);
  const hold = ({ client, upstream }: { client: Socket; upstream: Socket }): void => {
    client.unpipe(upstream);
    upstream.unpipe(client);
  };
  let server: Server;
  const listen = async (port: number): Promise<number> => {
    server = createServer((client) => {
      const upstream = createConnection(target);
      const pair = { client, upstream };
      track(client);
      track(upstream);
      pairs.add(pair);
      client.once('close', () => pairs.delete(pair));
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      if (blackholed) client.pause();
      else forward(pair);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    listening = true;
    return (server.address() as AddressInfo).port;
  };
  const stop = async (): Promise<void> => {
    listening = false;
    blackholed = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  };
  const port = await listen(0);
  return {
    port,
    cut: stop,
    blackhole: () => {
      blackholed = true;
      for (const pair of pairs) hold(pair);
    },
    restore: async () => {
      if (!listening) await listen(port);
      else if (blackholed) {
        blackholed = false;
        for (const pair of pairs) forward(pair);
      }
    },
    close: stop,
  };
}
