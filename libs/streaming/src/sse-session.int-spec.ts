import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import express from 'express';
import { Kafka } from 'kafkajs';
import type { StreamEvent } from '#libs/contracts';
import { testConfig } from '../../../test/support/config.js';
import { Fixtures } from '../../../test/support/fixtures.js';
import { serve } from '../../../test/support/http.js';
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
  let close: (() => Promise<void>) | undefined;
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
    ({ url, close } = await serve(app));
  });
  afterAll(async () => {
    await close?.();
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

/** Live events over real HTTP: the hub is stood in for by what SseSession subscribes to, so the
 * test hands it a batch as the Kafka fan-out would. */
describe('SseSession, live batches', () => {
  let fixtures: Fixtures;
  let close: (() => Promise<void>) | undefined;
  let url: string;
  /** The session's live listener, and every chunk it wrote to the response. */
  let live: ((events: readonly StreamEvent[]) => void) | undefined;
  const writes: string[] = [];

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    const store = new StreamStore(fixtures.db);
    const hub = {
      subscribe: (_requestId: string, listener: (events: readonly StreamEvent[]) => void) => {
        live = listener;
        return () => undefined;
      },
    } as unknown as StreamHub;
    const app = express();
    app.get('/events/:requestId/:projectId', (req, res) => {
      const write = res.write.bind(res) as (chunk: string) => boolean;
      res.write = ((chunk: string) => {
        writes.push(String(chunk));
        return write(chunk);
      }) as typeof res.write;
      void new SseSession(res, hub, store, {
        requestId: String(req.params.requestId),
        projectId: String(req.params.projectId),
        afterSeq: 0,
      }).run();
    });
    ({ url, close } = await serve(app));
  });
  afterAll(async () => {
    await close?.();
    await fixtures?.close();
  });

  // Issue 28: beside ten streams held open, the api spent 0.7 s of CPU in 40 s on socket writes,
  // one a token event (its CPU profile in the noisy-neighbour phase).
  it("writes a live batch's events in one write, in order, and each of them once", async () => {
    const { project } = await fixtures.project();
    let body = '';
    const client = httpRequest(`${url}/events/${randomUUID()}/${project.id}`);
    client.on('response', (res) => res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8'))));
    client.on('error', () => undefined);
    client.end();
    while (!live) await sleep(10);
    await sleep(100); // its first read of the store, which holds nothing
    const token = (seq: number): StreamEvent => ({ seq, type: 'token', data: { text: `t${seq}` } });
    writes.length = 0;
    live([1, 2, 3, 4, 5].map(token));
    live([4, 5, 6].map(token));
    while ((body.match(/^event: /gm) ?? []).length < 6) await sleep(10);
    client.destroy();
    expect(writes).toHaveLength(2);
    expect([...body.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))).toEqual([1, 2, 3, 4, 5, 6]);
  });
});
