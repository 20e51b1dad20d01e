import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import express from 'express';
import { Kafka } from 'kafkajs';
import { testConfig } from '../../../test/support/config.js';
import { Fixtures } from '../../../test/support/fixtures.js';
import { SseSession } from './sse-session.js';
import { StreamHub } from './stream-hub.js';
import { StreamStore } from './stream-store.js';

const config = testConfig();

/** An SSE connection over real HTTP and the real PostgreSQL store (the hub is not started: no live
 * events, so the session lives on its store polls, as it does while a model thinks). */
describe('SseSession', () => {
  let fixtures: Fixtures;
  let store: StreamStore;
  let hub: StreamHub;
  let server: Server;
  let url: string;
  /** What each GET /events did: its session's run, once started. */
  let handlers: { entered: () => void; run?: Promise<void> }[] = [];

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    store = new StreamStore(fixtures.db);
    hub = new StreamHub(new Kafka({ clientId: 'sse-session-spec', brokers: [...config.kafkaBrokers] }));
    const app = express();
    app.get('/events/:requestId/:projectId', (req, res) => {
      const handler = handlers.shift()!;
      handler.entered();
      // As the api does when a client leaves during authentication or admission: the session
      // starts only after the connection has closed.
      void once(res, 'close').then(() => {
        const session = new SseSession(res, hub, store, {
          requestId: String(req.params.requestId),
          projectId: String(req.params.projectId),
          afterSeq: 0,
        });
        handler.run = session.run();
      });
    });
    server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await fixtures?.close();
  });

  // Issue 28: the close listener was attached in run(); a client gone before then was never seen
  // to go, and its session polled PostgreSQL every second until the run ended (or forever).
  it('ends at once when the client left before the stream started', async () => {
    const { project } = await fixtures.project();
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    const handler: { entered: () => void; run?: Promise<void> } = { entered };
    handlers = [handler];
    const client = httpRequest(`${url}/events/${randomUUID()}/${project.id}`);
    client.on('error', () => undefined);
    client.end();
    await inHandler;
    client.destroy();
    while (!handler.run) await sleep(10);
    const outcome = await Promise.race([
      handler.run.then(() => 'ended'),
      sleep(5000).then(() => 'still open after 5 s'),
    ]);
    expect(outcome).toBe('ended');
  });
});
