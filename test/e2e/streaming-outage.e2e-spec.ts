import { readSse } from '../support/sse.js';
import { e2eStack } from '../support/e2e-stack.js';
import { withComponentStopped } from '../support/stack.js';

/** Kafka carries only the live copy of stream events: with the worker's Kafka unreachable (a dead
 * broker address, as when the broker is down), a streamed run still completes, its events reach
 * the client from PostgreSQL, and the customer's model is called once. */
describe('streaming while Kafka is unreachable for the worker', () => {
  const stack = e2eStack({ name: 'streaming-outage', workerEnv: { KAFKA_BROKERS: '127.0.0.1:9' } });

  it('completes the stream from the store, calls the model once and charges once', async () => {
    const { api, fixtures, models } = stack;
    const { auth, project } = await fixtures.project({
      credits: 20,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: models.url, apiKey: 'sk-test' },
    });
    models.reply({ content: 'one two three four five six', usage: { input: 11, output: 6 } });
    const calls = models.requests.length;
    const res = await readSse(`${api.url}/v1/agent`, {
      method: 'POST',
      headers: auth,
      body: { message: 'count', stream: true, capabilities: ['chat'] },
    });
    expect(res.status).toBe(200);
    const done = res.events.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data.usage).toMatchObject({ credits_this_request: 1, credits_remaining: 19, tokens_used: 17 });
    expect(
      res.events
        .filter((e) => e.event === 'token')
        .map((e) => e.data.content)
        .join(''),
    ).toBe('one two three four five six');
    expect(models.requests.length - calls).toBe(1);
    const usage: unknown[] = await fixtures.db.query(`select 1 from outbox where topic = 'mas.usage.v1' and key = $1`, [
      project.id,
    ]);
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
    const res = await readSse(`${stack.api.url}/v1/agent`, {
      method: 'POST',
      headers: auth,
      body: { message: 'go', stream: true, capabilities: ['chat'] },
    });
    return { res, modelCalls: stack.models.requests.length - calls };
  };

  it('streams while Kafka is down and after it is back, the model called once each time', async () => {
    const { auth } = await stack.fixtures.project({
      credits: 20,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' },
    });
    const during = await withComponentStopped('kafka', () => streamOnce(auth, 'while kafka is down'));
    expect({ status: during.res.status, last: during.res.events.at(-1)?.event, modelCalls: during.modelCalls }).toEqual(
      { status: 200, last: 'done', modelCalls: 1 },
    );
    const after = await streamOnce(auth, 'after kafka is back');
    expect({ status: after.res.status, last: after.res.events.at(-1)?.event, modelCalls: after.modelCalls }).toEqual({
      status: 200,
      last: 'done',
      modelCalls: 1,
    });
    expect(
      after.res.events
        .filter((e) => e.event === 'token')
        .map((e) => e.data.content)
        .join(''),
    ).toBe('after kafka is back');
  }, 240_000);
});
