import { randomUUID } from 'node:crypto';
import { EVENT_TYPES, TOPICS } from '#libs/contracts';
import { createKafka } from '#libs/kafka';
import { startApi, type RunningApi } from '../support/api.js';
import { startAppProcess, type AppProcess } from '../support/app-process.js';
import { testConfig } from '../support/config.js';
import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { Fixtures } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { startModelServer, type ModelServer } from '../support/model-server.js';
import { collect } from '../support/kafka.js';
import { readSse } from '../support/sse.js';
import { APP_CLOSE_TIMEOUT_MS, startWorker, type RunningWorker } from '../support/worker.js';

const lookup = {
  name: 'lookup',
  description: 'Look up',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
};

/** JSON with sorted keys (the store's jsonb orders keys its own way). */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );

/** A request's stop events (not its admission or its tool outputs), in order. */
async function stopEvents(
  fixtures: Fixtures,
  requestId: string,
): Promise<{ type: string; stop: number; credits: number }[]> {
  const rows: { type: string; data: { stop: number; creditsCharged: number } }[] = await fixtures.db.query(
    `select type, data from events where stream_id = $1 and type not in ($2, $3) order by version`,
    [`agent-request-${requestId}`, EVENT_TYPES.agentRequestAccepted, EVENT_TYPES.agentRequestToolOutputsSubmitted],
  );
  return rows.map((r) => ({ type: r.type, stop: r.data.stop, credits: r.data.creditsCharged }));
}

/** The credits of the usage events queued for mas.usage.v1 for a request. */
async function usageCredits(fixtures: Fixtures, requestId: string): Promise<number[]> {
  const rows: { credits: number }[] = await fixtures.db.query(
    `select (payload->'data'->>'credits')::int as credits from outbox where topic = $1 and payload->'data'->>'request_id' = $2`,
    [TOPICS.usage, requestId],
  );
  return rows.map((r) => r.credits);
}

/**
 * A stop is recorded once (DESIGN.md section 10): a workflow task retried after its local
 * activities committed re-runs them, and the re-run adopts what was recorded first. Over the real
 * Temporal, PostgreSQL and worker processes killed by the test's hook.
 */
describe('a retried workflow task changes nothing', () => {
  describe('a worker that dies right after recordStop committed', () => {
    const config = testConfig();
    // Shorter than the workflow task timeout (10 s): the task is retried past the pickup deadline.
    // Both workers unversioned (test/support/worker.ts's default): this file is not about deploys.
    const env = {
      TEMPORAL_TASK_QUEUE: `e2e-retried-task-${randomUUID()}`,
      AGENT_PICKUP_TIMEOUT_MS: '4000',
      RECONCILER_INTERVAL_SECONDS: '0',
      TEMPORAL_WORKER_VERSIONING: 'false',
    };
    let fixtures: Fixtures;
    let models: ModelServer;
    let api: RunningApi;
    let dying: AppProcess | undefined;
    let takeover: RunningWorker | undefined;

    beforeAll(async () => {
      fixtures = await Fixtures.open(config);
      models = await startModelServer();
      api = await startApi(env);
    }, 60_000);
    afterAll(async () => {
      await dying?.stop();
      await takeover?.close();
      await api?.close();
      await models?.close();
      await fixtures?.close();
    }, APP_CLOSE_TIMEOUT_MS);

    it('is taken over by another worker: the answer, its replay, GET, the ledger, the events and the usage event agree, and the model was called once', async () => {
      dying = startAppProcess('worker', { ...env, MAS_TEST_EXIT_AFTER_RECORD_STOP: 'true' });
      await dying.started(/polling task queue/);
      const { project, auth } = await fixtures.project({
        credits: 20,
        model: { provider: 'openai', model: 'gpt-test', baseUrl: models.url, apiKey: 'sk-test' },
      });
      models.reply({ content: 'the one answer' });
      const headers = { ...auth, 'idempotency-key': randomUUID() };
      const answer = request(api.url, 'POST', '/v1/agent', {
        headers,
        body: { message: 'go', capabilities: ['chat'] },
      });
      // The first worker records the stop and dies before its workflow task completes.
      await eventually(async () => expect(dying!.process.exitCode ?? dying!.process.signalCode).toBeTruthy(), 30_000);
      takeover = await startWorker(env);

      const res = await answer;
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'completed',
        message: 'the one answer',
        usage: { credits_this_request: 1, credits_remaining: 19 },
      });
      const id = res.body.id as string;
      const replay = await request(api.url, 'POST', '/v1/agent', {
        headers,
        body: { message: 'go', capabilities: ['chat'] },
      });
      expect(replay.status).toBe(200);
      expect(replay.body).toEqual(res.body);
      expect((await request(api.url, 'GET', `/v1/agent/${id}`, { headers: auth })).body).toMatchObject({
        status: 'completed',
        message: 'the one answer',
        usage: { credits_this_request: 1 },
      });
      expect(await stopEvents(fixtures, id)).toEqual([
        { type: EVENT_TYPES.agentRequestCompleted, stop: 1, credits: 1 },
      ]);
      expect(await usageCredits(fixtures, id)).toEqual([1]);
      const ledger: { kind: string; credits: number }[] = await fixtures.db.query(
        `select kind, credits from credit_ledger where request_id = $1 order by kind`,
        [id],
      );
      expect(ledger).toEqual([
        { kind: 'reserve', credits: 1 },
        { kind: 'settle', credits: 1 },
      ]);
      expect((await fixtures.accounts.findProject(project.id)).creditBalance).toBe(19);
      // The second worker read the stored answer back: the customer's model answered once.
      expect(models.requests).toHaveLength(1);
    }, 90_000);
  });

  describe('cancellations racing a step', () => {
    const stack = e2eStack({ name: 'retried-task' });
    const project = () =>
      stack.fixtures.project({
        credits: 20,
        model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' },
      });
    beforeEach(() => {
      stack.models.clearReplies();
      stack.models.requests.length = 0;
    });

    it("a cancel during a continuation's model call: one outcome for the stop, told alike to both callers, and one model call", async () => {
      const { auth } = await project();
      stack.models.reply(
        { toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] },
        { content: 'the continuation', delayMs: 3000 },
      );
      const paused = await request(stack.api.url, 'POST', '/v1/agent', {
        headers: auth,
        body: { message: 'go', tools: [lookup] },
      });
      expect(paused.body.status).toBe('requires_tool_outputs');
      const id = paused.body.id as string;
      const outputs = request(stack.api.url, 'POST', `/v1/agent/${id}/tool-outputs`, {
        headers: auth,
        body: {
          tool_outputs: [{ tool_call_id: paused.body.tool_calls[0].id, output: 'found' }],
          _compute_instance: paused.body._compute_instance,
        },
      });
      await eventually(async () => expect(stack.models.requests).toHaveLength(2));
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const cancel = await request(stack.api.url, 'POST', `/v1/agent/${id}/cancel`, { headers: auth });
      const continued = await outputs;
      const read = await request(stack.api.url, 'GET', `/v1/agent/${id}`, { headers: auth });
      const stops = await stopEvents(stack.fixtures, id);
      // One event per stop, and the second stop's outcome is the one every caller was told.
      expect(stops.map((s) => s.stop)).toEqual([1, 2]);
      expect({ status: continued.status, body: continued.body }).toEqual({
        status: 200,
        body: continued.body.error ? {} : continued.body,
      });
      expect(read.body.status).toBe(continued.body.status);
      if (continued.body.status === 'completed') {
        expect(stops[1]!.type).toBe(EVENT_TYPES.agentRequestCompleted);
        expect(continued.body.message).toBe('the continuation');
        expect(cancel.status).toBe(409);
      } else {
        expect(continued.body.status).toBe('cancelled');
        expect(stops[1]!.type).toBe(EVENT_TYPES.agentRequestCancelled);
        expect(cancel.status).toBe(200);
      }
      expect(stack.models.requests).toHaveLength(2);
    }, 60_000);

    it('a streamed model call retried after failing half-way never gives one event number two contents', async () => {
      const { auth } = await project();
      // Every event the live fan-out carried, as every api replica sees it.
      const live = await collect(createKafka(stack.config, 'retried-task'), TOPICS.stream);
      try {
        // The first attempt streams two words and the connection is cut; the retry answers in full.
        stack.models.reply(
          { content: 'alpha beta gamma delta', failAfterEvents: 3 },
          { content: 'one two three four five six' },
        );
        const client = await readSse(`${stack.api.url}/v1/agent`, {
          method: 'POST',
          headers: auth,
          body: { message: 'go', stream: true },
        });
        const id = client.headers.get('x-request-id')!;
        expect(client.events.at(-1)!.event).toBe('done');
        const replayed = await readSse(`${stack.api.url}/v1/agent/${id}/events`, { headers: auth });
        await live.waitFor((messages) =>
          messages.some(
            (m) => m['requestId'] === id && (m['events'] as { type: string }[]).some((e) => e.type === 'done'),
          ),
        );
        // Each seq with one content, whoever read it: the live fan-out, the client, the replay.
        const contents = new Map<number, Set<string>>();
        const seen = (seq: number, data: unknown) =>
          contents.set(seq, (contents.get(seq) ?? new Set()).add(canonical(data)));
        for (const m of live.messages.filter((m) => m['requestId'] === id))
          for (const e of m['events'] as { seq: number; data: unknown }[]) seen(e.seq, e.data);
        // (A client's payload also carries its event's type.)
        for (const e of [...client.events, ...replayed.events])
          seen(Number(e.id), (({ type: _type, ...data }) => data)(e.data as Record<string, unknown>));
        expect([...contents].filter(([, c]) => c.size > 1)).toEqual([]);
        // The client was given the whole answer of the attempt that succeeded.
        expect(
          client.events
            .filter((e) => e.event === 'token')
            .map((e) => e.data.content)
            .join(''),
        ).toMatch(/one two three four five six$/);
        expect(stack.models.requests).toHaveLength(2);
      } finally {
        await live.stop();
      }
    }, 60_000);

    it('a cancel after the model streamed its answer charges the run as one whose model answered', async () => {
      const { project: p, auth } = await project();
      // Every word is streamed, then the model holds the response open until the call is aborted.
      stack.models.reply({ content: 'all of it', stallAfterEvents: 4 });
      const stream = readSse(`${stack.api.url}/v1/agent`, {
        method: 'POST',
        headers: auth,
        body: { message: 'go', stream: true },
      });
      let id = '';
      await eventually(async () => {
        const rows: { request_id: string; n: number }[] = await stack.fixtures.db.query(
          `select l.request_id, (select count(*)::int from stream_events s where s.request_id = l.request_id and s.type = 'token') as n from credit_ledger l where l.project_id = $1 and l.kind = 'reserve'`,
          [p.id],
        );
        expect(rows[0]?.n).toBe(3);
        id = rows[0]!.request_id;
      });
      const cancel = await request(stack.api.url, 'POST', `/v1/agent/${id}/cancel`, { headers: auth });
      expect(cancel.status).toBe(200);
      expect(cancel.body).toMatchObject({
        status: 'cancelled',
        message: 'all of it',
        capabilities_used: ['chat'],
        usage: { credits_this_request: 1, credits_remaining: 19 },
      });
      expect((await stream).events.at(-1)!.event).toBe('error');
      expect(await usageCredits(stack.fixtures, id)).toEqual([1]);
    }, 60_000);
  });
});
