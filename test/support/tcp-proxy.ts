import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** A loopback TCP proxy in front of a real server (PostgreSQL in the outage tests): `cut()` closes
 * every connection and refuses new ones, as a server that went away does; `restore()` forwards again
 * on the same port. */
export interface TcpProxy {
  readonly port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };
  let server: Server;
  const listen = async (port: number): Promise<number> => {
    server = createServer((client) => {
      const upstream = createConnection(target);
      track(client);
      track(upstream);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    return (server.address() as AddressInfo).port;
  };
  const stop = async (): Promise<void> => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  };
  const port = await listen(0);
  return { port, cut: stop, restore: async () => void (await listen(port)), close: stop };
}
