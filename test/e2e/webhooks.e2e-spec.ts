import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client, Connection } from '@temporalio/client';
import type { AppConfig } from '#libs/config';
import { agentRequestStreamId, EVENT_TYPES, webhookWorkflowId } from '#libs/contracts';
import { EventStore, fromStored, type DomainEvent } from '#libs/events';
import { AesGcmPayloadCodec } from '#libs/temporal';
import { WebhookDispatcher, WebhookStore } from '#libs/webhooks';
import { runCli, type CliIo } from '../../apps/cli/src/cli.js';
import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { request } from '../support/http.js';
import { connectTemporal, historyText } from '../support/temporal.js';

// Webhooks end to end: the CLI adds an endpoint on loopback (allowed by WEBHOOK_ALLOW_HOSTS), the
// api runs a request that pauses for a custom tool and completes, the relay and the worker's
// dispatcher turn its events into `webhook-<delivery id>` workflows, and a receiver that fails
// twice per delivery (500) then accepts sees every attempt signed and exactly one accepted
// delivery per event. Real api, worker, relay, Kafka, PostgreSQL and Temporal.

const stack = e2eStack({
  name: 'webhooks',
  pipeline: true,
  env: {
    WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
    WEBHOOK_RETRY_INITIAL_INTERVAL_MS: '100',
    WEBHOOK_RETRY_MAXIMUM_INTERVAL_MS: '300',
    WEBHOOK_RETRY_FOR_MS: '8000',
    WEBHOOK_TIMEOUT_MS: '5000',
  },
});

/**
 * A verifier written from the Standard Webhooks 1.0 specification text alone (it shares nothing
 * with the service's signer): the signed content is `<webhook-id>.<webhook-timestamp>.<body>`,
 * the key is the base64 part of the `whsec_` secret, `webhook-signature` is a space-delimited list
 * of `v1,<base64 HMAC-SHA-256>`, compared in constant time, with a tolerance on the timestamp.
 */
function verifyStandardWebhook(
  secret: string,
  headers: IncomingHttpHeaders,
  body: string,
  nowSeconds: number,
  toleranceSeconds = 300,
): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  if (!/^\d+$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds) return false;
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((entry) => {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') return false;
    const given = Buffer.from(entry.slice(comma + 1), 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

interface Received {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly answered: number;
}

/** A receiver on loopback: `/flaky` answers 500 to the first two attempts of each webhook-id and
 * 200 after; `/always-500` and `/gone` answer what they say. */
async function startReceiver(): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      const path = req.url ?? '';
      const before = received.filter((r) => r.path === path && r.headers['webhook-id'] === id).length;
      const answered = path === '/gone' ? 410 : path === '/always-500' ? 500 : before < 2 ? 500 : 200;
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered });
      res.writeHead(answered).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function cli(args: readonly string[], config: AppConfig): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CliIo = { out: (s) => void (out += s), err: (s) => void (err += s), readStdin: async () => '', env: {} };
  const code = await runCli(args, config, io);
  return { code, out, err };
}

const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const withoutDuration = (resource: { meta?: Record<string, unknown> }) => ({
  ...resource,
  meta: { ...resource.meta, duration_ms: 0 },
});

describe('webhooks', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let temporal: { client: Client; connection: Connection };
  /** The CLI as an operator who allowed loopback receivers runs it. */
  let operator: AppConfig;

  beforeAll(async () => {
    receiver = await startReceiver();
    temporal = await connectTemporal(stack.config);
    operator = { ...stack.config, webhooks: { ...stack.config.webhooks, allowHosts: ['127.0.0.1'] } };
  });
  afterAll(async () => {
    await receiver.close();
    await temporal.connection.close();
  });

  it("has a verifier that accepts the specification's published example and rejects a changed body", () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const headers = {
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    };
    expect(verifyStandardWebhook(secret, headers, '{"test": 2432232314}', 1614265330)).toBe(true);
    expect(verifyStandardWebhook(secret, headers, '{"test": 2432232315}', 1614265330)).toBe(false);
    expect(verifyStandardWebhook(secret, headers, '{"test": 2432232314}', 1614265330 + 3600)).toBe(false);
  });

  it('refuses a private literal address, unknown events and a missing URL at `webhook add`', async () => {
    const { project } = await stack.fixtures.project();
    const privateUrl = await cli(['webhook', 'add', project.id, '--url', 'http://10.1.2.3/hook'], stack.config);
    expect(privateUrl).toMatchObject({ code: 1, err: expect.stringContaining('10.1.2.3 is a private address') });
    const loopback = await cli(['webhook', 'add', project.id, '--url', `${receiver.url}/flaky`], stack.config);
    expect(loopback).toMatchObject({ code: 1, err: expect.stringContaining('loopback') });
    expect(
      await cli(
        [
          'webhook',
          'add',
          project.id,
          '--url',
          'https://example.com/hook',
          '--events',
          'agent.completed,agent.exploded',
        ],
        stack.config,
      ),
    ).toMatchObject({ code: 1, err: expect.stringContaining('unknown events: agent.exploded') });
    expect((await cli(['webhook', 'add', project.id], stack.config)).code).toBe(2);
    expect(JSON.parse((await cli(['webhook', 'list', project.id, '--json'], stack.config)).out)).toEqual([]);
  });

  it('delivers agent.requires_tool_outputs and agent.completed, signed, retried after 500s, accepted exactly once per event', async () => {
    const { project, auth } = await stack.fixtures.project();
    const added = await cli(
      [
        'webhook',
        'add',
        project.name,
        '--url',
        `${receiver.url}/flaky`,
        '--events',
        'agent.requires_tool_outputs,agent.completed',
        '--json',
      ],
      operator,
    );
    expect(added.code).toBe(0);
    const endpoint = JSON.parse(added.out) as { id: string; secret: string; events: string[] };
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(endpoint.events).toEqual(['agent.requires_tool_outputs', 'agent.completed']);
    const listed = await cli(['webhook', 'list', project.id, '--json'], operator);
    expect(listed.out).not.toContain(endpoint.secret);
    expect(JSON.parse(listed.out)).toEqual([
      expect.objectContaining({ id: endpoint.id, url: `${receiver.url}/flaky` }),
    ]);

    const first = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'Weather? use get_weather {"city":"Oslo"}', tools: [weatherTool] },
    });
    expect(first.body).toMatchObject({ status: 'requires_tool_outputs' });
    const requestId = first.body.id as string;
    const done = await request(stack.api.url, 'POST', `/v1/agent/${requestId}/tool-outputs`, {
      headers: auth,
      body: {
        tool_outputs: [{ tool_call_id: first.body.tool_calls[0].id, output: 'Sunny, 21 C' }],
        _compute_instance: first.body._compute_instance,
      },
    });
    expect(done.body).toMatchObject({ status: 'completed' });

    // Both deliveries end (their workflows completed) as delivered.
    const deliveries = await eventually(async () => {
      const listing = await cli(['webhook', 'deliveries', project.id, '--json'], operator);
      const rows = JSON.parse(listing.out) as {
        id: string;
        workflow_id: string;
        event: string;
        status: string;
        attempts: { attempt: number; status_code: number | null }[];
      }[];
      expect(rows.map((r) => [r.event, r.status]).sort()).toEqual([
        ['agent.completed', 'delivered'],
        ['agent.requires_tool_outputs', 'delivered'],
      ]);
      return rows;
    }, 60_000);
    for (const d of deliveries) {
      expect(d.attempts.map((a) => [a.attempt, a.status_code])).toEqual([
        [1, 500],
        [2, 500],
        [3, 200],
      ]);
      const result = await temporal.client.workflow.getHandle(webhookWorkflowId(d.id)).result();
      expect(result).toEqual({ deliveryId: d.id, status: 'delivered', statusCode: 200 });
    }

    const mine = receiver.received.filter((r) => deliveries.some((d) => d.id === r.headers['webhook-id']));
    expect(mine).toHaveLength(6);
    const now = Math.floor(Date.now() / 1000);
    for (const r of mine) expect(verifyStandardWebhook(endpoint.secret, r.headers, r.body, now)).toBe(true);
    // Another secret does not verify them: the check can fail.
    expect(
      verifyStandardWebhook('whsec_' + Buffer.alloc(32, 1).toString('base64'), mine[0]!.headers, mine[0]!.body, now),
    ).toBe(false);
    const accepted = mine.filter((r) => r.answered === 200);
    expect(accepted.map((r) => r.headers['webhook-id']).sort()).toEqual(deliveries.map((d) => d.id).sort());
    // Every attempt of a delivery sends the same body under the same id.
    for (const d of deliveries)
      expect(new Set(mine.filter((r) => r.headers['webhook-id'] === d.id).map((r) => r.body)).size).toBe(1);

    // The payload: Standard Webhooks' envelope around the resource as GET shows it at that event.
    const bodies = accepted.map(
      (r) =>
        JSON.parse(r.body) as {
          type: string;
          timestamp: string;
          data: Record<string, unknown> & { meta?: Record<string, unknown> };
        },
    );
    const paused = bodies.find((b) => b.type === 'agent.requires_tool_outputs')!;
    expect(paused.data).toMatchObject({
      id: requestId,
      object: 'agent.response',
      status: 'requires_tool_outputs',
      tool_calls: first.body.tool_calls,
    });
    expect(withoutDuration(paused.data)).toEqual(withoutDuration(first.body));
    const completed = bodies.find((b) => b.type === 'agent.completed')!;
    const read = await request(stack.api.url, 'GET', `/v1/agent/${requestId}`, { headers: auth });
    expect(withoutDuration(completed.data)).toEqual(withoutDuration(read.body));
    expect(new Date(completed.timestamp).getTime()).not.toBeNaN();

    // Neither the secret nor the body nor the URL is in the workflow's history, even decrypted.
    const history = await temporal.client.workflow.getHandle(webhookWorkflowId(deliveries[0]!.id)).fetchHistory();
    const decrypted = await historyText(
      history,
      new AesGcmPayloadCodec(stack.config.payloadKeys.keys, stack.config.payloadKeys.current),
    );
    expect(decrypted).toContain(deliveries[0]!.id);
    expect(decrypted).not.toContain(endpoint.secret);
    expect(decrypted).not.toContain(endpoint.secret.slice('whsec_'.length));
    // The body (it names the request) and the receiver's URL are read from PostgreSQL by the activity.
    expect(decrypted).not.toContain(requestId);
    expect(decrypted).not.toContain(receiver.url);

    // The same event dispatched again (Kafka redelivers at least once) sends nothing: the
    // delivery row is found, and even a pending one meets the closed workflow's id.
    const events = (await new EventStore().readStream(stack.fixtures.db.manager, agentRequestStreamId(requestId))).map(
      fromStored,
    );
    const completedEvent = events.find((e) => e.type === EVENT_TYPES.agentRequestCompleted) as DomainEvent;
    const store = new WebhookStore(stack.fixtures.db, stack.config);
    const dispatcher = new WebhookDispatcher(
      undefined as never,
      temporal.client,
      store,
      { render: async () => ({}) },
      {
        groupId: 'unused',
        taskQueue: stack.env.TEMPORAL_TASK_QUEUE!,
        retry: { initialIntervalMs: 100, maximumIntervalMs: 300, retryForMs: 8000, attemptTimeoutMs: 5000 },
      },
    );
    expect(await dispatcher.dispatch(completedEvent)).toBe(0);
    const completedDelivery = deliveries.find((d) => d.event === 'agent.completed')!;
    await stack.fixtures.db.query(`update webhook_deliveries set status = 'pending' where id = $1`, [
      completedDelivery.id,
    ]);
    expect(await dispatcher.dispatch(completedEvent)).toBe(0);
    await stack.fixtures.db.query(`update webhook_deliveries set status = 'delivered' where id = $1`, [
      completedDelivery.id,
    ]);
    expect(receiver.received.filter((r) => r.headers['webhook-id'] === completedDelivery.id)).toHaveLength(3);
  }, 120_000);

  it('delivers session.ended with the session resource as GET shows it', async () => {
    const { project, auth } = await stack.fixtures.project();
    const added = await cli(
      ['webhook', 'add', project.id, '--url', `${receiver.url}/flaky`, '--events', 'session.ended', '--json'],
      operator,
    );
    const endpoint = JSON.parse(added.out) as { secret: string };
    const session = await request(stack.api.url, 'POST', '/v1/sessions', { headers: auth });
    expect(session.status).toBe(200);
    expect((await request(stack.api.url, 'DELETE', `/v1/sessions/${session.body.id}`, { headers: auth })).status).toBe(
      200,
    );
    const delivered = await eventually(async () => {
      const hit = receiver.received.find(
        (r) => r.answered === 200 && (JSON.parse(r.body) as { data: { id: string } }).data.id === session.body.id,
      );
      expect(hit).toBeDefined();
      return hit!;
    }, 60_000);
    expect(
      verifyStandardWebhook(endpoint.secret, delivered.headers, delivered.body, Math.floor(Date.now() / 1000)),
    ).toBe(true);
    const read = await request(stack.api.url, 'GET', `/v1/sessions/${session.body.id}`, { headers: auth });
    expect(JSON.parse(delivered.body)).toEqual({
      type: 'session.ended',
      timestamp: expect.any(String),
      data: read.body,
    });
    expect(read.body.status).toBe('ended');
  }, 120_000);

  it('refuses at delivery an address the worker does not allow, once, without retrying', async () => {
    const { project, auth } = await stack.fixtures.project();
    // Added while the operator allowed all of loopback; the worker allows 127.0.0.1 only.
    const wider = new WebhookStore(stack.fixtures.db, {
      ...stack.config,
      webhooks: { ...stack.config.webhooks, allowHosts: ['127.0.0.0/8'] },
    });
    await wider.add(project.id, { url: 'http://127.0.0.2:9/hook', events: ['agent.completed'] });
    expect(
      (await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'Hello' } })).body.status,
    ).toBe('completed');
    const [delivery] = await eventually(async () => {
      const listing = JSON.parse((await cli(['webhook', 'deliveries', project.id, '--json'], operator)).out) as {
        status: string;
        attempts: { status_code: number | null; error: string | null }[];
      }[];
      expect(listing.map((d) => d.status)).toEqual(['failed']);
      return listing;
    }, 60_000);
    expect(delivery!.attempts).toEqual([
      expect.objectContaining({ status_code: null, error: expect.stringContaining('127.0.0.2 is a loopback address') }),
    ]);
  }, 120_000);

  it('gives up after the retry period, or at once on 410 Gone, with every attempt listed; a removed endpoint gets no later event', async () => {
    const { project, auth } = await stack.fixtures.project();
    const failing = JSON.parse(
      (
        await cli(
          [
            'webhook',
            'add',
            project.id,
            '--url',
            `${receiver.url}/always-500`,
            '--events',
            'agent.completed',
            '--json',
          ],
          operator,
        )
      ).out,
    ) as { id: string };
    await cli(['webhook', 'add', project.id, '--url', `${receiver.url}/gone`, '--events', 'agent.completed'], operator);
    const res = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'Hello' } });
    expect(res.body.status).toBe('completed');
    const rows = await eventually(async () => {
      const listing = JSON.parse((await cli(['webhook', 'deliveries', project.id, '--json'], operator)).out) as {
        webhook_id: string;
        status: string;
        attempts: { status_code: number | null }[];
      }[];
      expect(listing.map((d) => d.status)).toEqual(['failed', 'failed']);
      return listing;
    }, 60_000);
    const toFailing = rows.find((d) => d.webhook_id === failing.id)!;
    expect(toFailing.attempts.length).toBeGreaterThan(2);
    expect(toFailing.attempts.every((a) => a.status_code === 500)).toBe(true);
    expect(rows.find((d) => d.webhook_id !== failing.id)!.attempts.map((a) => a.status_code)).toEqual([410]);

    const text = await cli(['webhook', 'deliveries', project.id], operator);
    expect(text.out).toMatch(/agent\.completed {2}failed/);
    expect(text.out).toMatch(/attempt 1 {2}\S+ {2}500/);

    expect((await cli(['webhook', 'remove', project.id, failing.id], operator)).code).toBe(0);
    expect(await cli(['webhook', 'remove', project.id, failing.id], operator)).toMatchObject({
      code: 1,
      err: expect.stringContaining('no webhook'),
    });
    expect(JSON.parse((await cli(['webhook', 'list', project.id, '--json'], operator)).out)).toHaveLength(1);
    // The next event goes to the endpoint that is left only.
    expect(
      (await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'Hello again' } })).body
        .status,
    ).toBe('completed');
    const after = await eventually(async () => {
      const listing = JSON.parse((await cli(['webhook', 'deliveries', project.id, '--json'], operator)).out) as {
        webhook_id: string;
        status: string;
      }[];
      expect(listing).toHaveLength(3);
      expect(listing[0]!.status).toBe('failed');
      return listing;
    }, 60_000);
    expect(after[0]!.webhook_id).not.toBe(failing.id);
  }, 120_000);
});
