import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApi } from '../support/api.js';
import { e2eStack } from '../support/e2e-stack.js';
import { request } from '../support/http.js';

/** One kept-alive connection to `url`: `healthz()` sends GET /healthz on it and resolves with the
 * answer's status line; `closed` says whether the server has closed it. */
async function keptAlive(url: string): Promise<{ socket: Socket; healthz(): Promise<string>; closed(): boolean }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  let closed = false;
  socket.on('end', () => (closed = true));
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  return {
    socket,
    closed: () => closed,
    healthz: async () => {
      received = '';
      socket.write(`GET /healthz HTTP/1.1\r\nHost: ${hostname}\r\nConnection: keep-alive\r\n\r\n`);
      while (!/\r\n\r\n[\s\S]*"ok"\}/.test(received) && !closed) await once(socket, 'data');
      return received.split('\r\n')[0]!;
    },
  };
}

describe('health', () => {
  const stack = e2eStack({ name: 'health', worker: false });

  it('GET /healthz answers while the process is alive', async () => {
    const res = await request(stack.api.url, 'GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  // Issue 28, session 20: with Node's default (5 s) the api closed idle connections itself, so a
  // client or load balancer sending on one as it closed got "socket hang up" (or a 502).
  it("keeps an idle connection open past Node's 5 s, longer than a load balancer's idle timeout", async () => {
    const connection = await keptAlive(stack.api.url);
    try {
      expect(await connection.healthz()).toBe('HTTP/1.1 200 OK');
      await sleep(6_000);
      expect(connection.closed()).toBe(false);
      expect(await connection.healthz()).toBe('HTTP/1.1 200 OK');
    } finally {
      connection.socket.destroy();
    }
  });

  it('closes an idle connection after HTTP_KEEP_ALIVE_TIMEOUT_MS', async () => {
    const api = await startApi({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '300' });
    const connection = await keptAlive(api.url);
    try {
      expect(await connection.healthz()).toBe('HTTP/1.1 200 OK');
      await once(connection.socket, 'end');
      expect(connection.closed()).toBe(true);
    } finally {
      connection.socket.destroy();
      await api.close();
    }
  });

  it('GET /readyz reports PostgreSQL, Kafka and Temporal up', async () => {
    const res = await request(stack.api.url, 'GET', '/readyz');
    expect(res.body).toMatchObject({
      status: 'ready',
      components: { postgres: { status: 'up' }, kafka: { status: 'up' }, temporal: { status: 'up' } },
    });
    expect(res.status).toBe(200);
  });

  it('GET /readyz answers 503 and names the component that is down', async () => {
    // A second api whose Kafka and Temporal addresses point at closed loopback ports.
    const broken = await startApi({ KAFKA_BROKERS: '127.0.0.1:1', TEMPORAL_ADDRESS: '127.0.0.1:2' });
    try {
      const { status, body } = await request(broken.url, 'GET', '/readyz');
      expect(status).toBe(503);
      expect(body.status).toBe('unavailable');
      expect(body.components.postgres.status).toBe('up');
      // A fixed reason for unauthenticated callers; the driver's own message (addresses, hosts) is logged only.
      expect(body.components.kafka).toEqual({
        status: 'down',
        latency_ms: expect.any(Number),
        error: expect.stringMatching(/^(unreachable|no answer within \d+ ms)$/),
      });
      expect(body.components.temporal).toEqual({
        status: 'down',
        latency_ms: expect.any(Number),
        error: expect.stringMatching(/^(unreachable|no answer within \d+ ms)$/),
      });
      expect(JSON.stringify(body)).not.toContain('127.0.0.1');
    } finally {
      await broken.close();
    }
  });

  it('GET /readyz shows a stuck relay (the oldest unsent outbox row) without taking the api out of service', async () => {
    const eventId = randomUUID();
    try {
      // A valid CloudEvent, in case a relay of another test publishes it meanwhile.
      const payload = { specversion: '1.0', id: eventId, type: 'mas.readyz-test.v1', source: 'test', data: {} };
      await stack.fixtures.db.query(
        `insert into outbox (event_id, topic, key, payload, created_at) values ($1, 'mas.events.v1', 'readyz-test', $2, now() - interval '10 minutes')`,
        [eventId, JSON.stringify(payload)],
      );
      const { status, body } = await request(stack.api.url, 'GET', '/readyz');
      expect(status).toBe(200);
      expect(body.status).toBe('ready');
      expect(body.components.outbox).toMatchObject({
        status: 'down',
        error: expect.stringMatching(/^the oldest unsent outbox row is \d+ s old/),
      });
    } finally {
      await stack.fixtures.db.query(`delete from outbox where event_id = $1`, [eventId]);
    }
  });
});
