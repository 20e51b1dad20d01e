import { agentRequestWorkflowId } from '#libs/contracts';
import { readSse } from '../support/sse.js';
import { e2eStack } from '../support/e2e-stack.js';
import { withComponentStopped } from '../support/stack.js';
import { request } from '../support/http.js';
import { connectTemporal } from '../support/temporal.js';

/** Kafka carries only the live copy of stream events: with the worker's Kafka unreachable (a dead
 * broker address, as when the broker is down), a streamed run still completes, its events reach
 * the client from PostgreSQL, and the customer's model is called once. */
describe('streaming while Kafka is unreachable for the worker', () => {
  const stack = e2eStack({ name: 'streaming-outage', workerEnv: { KAFKA_BROKERS: '127.0.0.1:9' } });

  it('completes the stream from the store, calls the model once and charges once', async () => {
    const { api, fixtures, models } = stack;
    const { auth, project } = await fixtures.project({ credits: 20, model: { provider: 'openai', model: 'gpt-test', baseUrl: models.url, apiKey: 'sk-test' } });
    models.reply({ content: 'one two three four five six', usage: { input: 11, output: 6 } });
    const calls = models.requests.length;
    const res = await readSse(`${api.url}/v1/agent`, { method: 'POST', headers: auth, body: { message: 'count', stream: true, capabilities: ['chat'] } });
    expect(res.status).toBe(200);
    const done = res.events.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data.usage).toMatchObject({ credits_this_request: 1, credits_remaining: 19, tokens_used: 17 });
    expect(res.events.filter((e) => e.event === 'token').map((e) => e.data.content).join('')).toBe('one two three four five six');
    expect(models.requests.length - calls).toBe(1);
    const usage: unknown[] = await fixtures.db.query(`select 1 from outbox where topic = 'mas.usage.v1' and key = $1`, [project.id]);
    expect(usage).toHaveLength(1);
  });
});

/** The same over a real outage: Kafka stopped with the stack script while a worker runs, then
 * started again. Before the fix the worker kept its first failed connection for good and every
 * later stream failed until the worker restarted. */
describe('streaming across a real Kafka outage', () => {
  const stack = e2eStack({ name: 'streaming-kafka-restart' });

  const streamOnce = async (auth: Record<string, string>, text: string) => {
    stack.models.reply({ content: text });
    const calls = stack.models.requests.length;
    const res = await readSse(`${stack.api.url}/v1/agent`, { method: 'POST', headers: auth, body: { message: 'go', stream: true, capabilities: ['chat'] } });
    return { res, modelCalls: stack.models.requests.length - calls };
  };

  it('streams while Kafka is down and after it is back, the model called once each time', async () => {
    const { auth } = await stack.fixtures.project({ credits: 20, model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' } });
    const during = await withComponentStopped('kafka', () => streamOnce(auth, 'while kafka is down'));
    expect({ status: during.res.status, last: during.res.events.at(-1)?.event, modelCalls: during.modelCalls }).toEqual({ status: 200, last: 'done', modelCalls: 1 });
    const after = await streamOnce(auth, 'after kafka is back');
    expect({ status: after.res.status, last: after.res.events.at(-1)?.event, modelCalls: after.modelCalls }).toEqual({ status: 200, last: 'done', modelCalls: 1 });
    expect(after.res.events.filter((e) => e.event === 'token').map((e) => e.data.content).join('')).toBe('after kafka is back');
  }, 240_000);
});

/** The store refuses a streamed run's end event after its stop was recorded (and charged): the run
 * must not fail for it. The refusal is a real PostgreSQL error, from a trigger on this project's
 * end events (the test's own project, so nothing else is touched). */
describe('a stream whose end event cannot be stored', () => {
  const stack = e2eStack({ name: 'stream-end-refused' });

  it('completes the run it charged: GET, the workflow and the client see completed, the end from the recorded stop', async () => {
    const { api, fixtures, models } = stack;
    const { auth, project } = await fixtures.project({ credits: 20, model: { provider: 'openai', model: 'gpt-test', baseUrl: models.url, apiKey: 'sk-test' } });
    const fn = `refuse_end_${project.id.replaceAll('-', '_')}`;
    await fixtures.db.query(`create function ${fn}() returns trigger language plpgsql as $$ begin raise exception 'end events refused for this test'; end $$`);
    await fixtures.db.query(`create trigger ${fn} before insert on stream_events for each row when (new.project_id = '${project.id}' and new.type in ('done', 'error')) execute function ${fn}()`);
    try {
      models.reply({ content: 'all of it' });
      const res = await readSse(`${api.url}/v1/agent`, { method: 'POST', headers: auth, body: { message: 'go', stream: true, capabilities: ['chat'] } });
      const id = res.headers.get('x-request-id')!;
      expect(res.events.at(-1)).toMatchObject({ event: 'done', data: { status: 'completed', usage: { credits_this_request: 1 } } });
      const read = await request(api.url, 'GET', `/v1/agent/${id}`, { headers: auth });
      expect(read.body).toMatchObject({ status: 'completed', message: 'all of it', usage: { credits_this_request: 1, credits_remaining: 19 } });
      const { client, connection } = await connectTemporal(stack.config);
      try {
        const described = await client.workflow.getHandle(agentRequestWorkflowId(id)).describe();
        expect(described.status.name).toBe('COMPLETED');
      } finally {
        await connection.close();
      }
    } finally {
      await fixtures.db.query(`drop trigger ${fn} on stream_events`);
      await fixtures.db.query(`drop function ${fn}()`);
    }
  }, 60_000);
});
