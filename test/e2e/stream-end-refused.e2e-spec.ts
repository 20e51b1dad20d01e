import { agentRequestWorkflowId } from '#libs/contracts';
import { e2eStack } from '../support/e2e-stack.js';
import { request } from '../support/http.js';
import { readSse } from '../support/sse.js';
import { connectTemporal } from '../support/temporal.js';

// A file of its own: as a third describe of streaming-outage.e2e-spec.ts, after that file's real
// Kafka restart, one of the file's afterAll hooks ran past Jest's 30 s. The cause: a worker whose
// Kafka consumer is rejoining after the restart disconnects only once the broker dropped its old
// member (the 30 s session timeout); e2eStack's afterAll now allows for it.
/** The store refuses a streamed run's end event after its stop was recorded (and charged): the run
 * must not fail for it. The refusal is a real PostgreSQL error, from a trigger on this project's
 * end events (the test's own project, so nothing else is touched). */
describe('a stream whose end event cannot be stored', () => {
  const stack = e2eStack({ name: 'stream-end-refused' });

  it('completes the run it charged: GET, the workflow and the client see completed, the end from the recorded stop', async () => {
    const { api, fixtures, models } = stack;
    const { auth, project } = await fixtures.project({
      credits: 20,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: models.url, apiKey: 'sk-test' },
    });
    const fn = `refuse_end_${project.id.replaceAll('-', '_')}`;
    await fixtures.db.query(
      `create function ${fn}() returns trigger language plpgsql as $$ begin raise exception 'end events refused for this test'; end $$`,
    );
    await fixtures.db.query(
      `create trigger ${fn} before insert on stream_events for each row when (new.project_id = '${project.id}' and new.type in ('done', 'error')) execute function ${fn}()`,
    );
    try {
      models.reply({ content: 'all of it' });
      const res = await readSse(`${api.url}/v1/agent`, {
        method: 'POST',
        headers: auth,
        body: { message: 'go', stream: true, capabilities: ['chat'] },
      });
      const id = res.headers.get('x-request-id')!;
      expect(res.events.at(-1)).toMatchObject({
        event: 'done',
        data: { status: 'completed', usage: { credits_this_request: 1 } },
      });
      const read = await request(api.url, 'GET', `/v1/agent/${id}`, { headers: auth });
      expect(read.body).toMatchObject({
        status: 'completed',
        message: 'all of it',
        usage: { credits_this_request: 1, credits_remaining: 19 },
      });
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
