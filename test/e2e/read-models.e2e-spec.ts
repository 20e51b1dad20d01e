import { Client, Connection } from '@temporalio/client';
import { agentRequestWorkflowId, sessionWorkflowId } from '#libs/contracts';
import { testConfig } from '../support/config.js';
import { e2eStack } from '../support/e2e-stack.js';
import { request } from '../support/http.js';
import { connectTemporalRaw } from '../support/temporal.js';

const config = testConfig();
/** Deleting a workflow from Temporal takes a few seconds. */
const SLOW = 240_000;

/** Reads answer from the read models built from the event stream: what a caller was told is
 * readable at once, and stays readable once Temporal has forgotten the workflow. */
describe('reads from read models', () => {
  const stack = e2eStack({ name: 'read-models', pipeline: true });
  let connection: Connection;
  let temporal: Client;

  beforeAll(async () => {
    connection = await connectTemporalRaw(config);
    temporal = new Client({ connection, namespace: config.temporal.namespace });
  });
  afterAll(async () => {
    await connection.close();
  });

  /** What the end of the namespace's retention does: the workflow and its history are gone. */
  async function forget(workflowId: string): Promise<void> {
    const handle = temporal.workflow.getHandle(workflowId);
    const { status } = await handle.describe();
    if (status.name === 'RUNNING') await handle.terminate('retention drill');
    await connection.workflowService.deleteWorkflowExecution({
      namespace: config.temporal.namespace,
      workflowExecution: { workflowId },
    });
    const deadline = Date.now() + 100_000;
    for (;;) {
      const gone = await handle.describe().then(
        () => false,
        () => true,
      );
      if (gone) return;
      if (Date.now() > deadline) throw new Error(`${workflowId} is still in Temporal`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it(
    'GET /v1/agent/{id} answers at once after the POST, and after the workflow has left Temporal',
    async () => {
      const { auth } = await stack.fixtures.project({ credits: 20 });
      const posted = await request(stack.api.url, 'POST', '/v1/agent', {
        headers: auth,
        body: { message: 'Remember the number 42', capabilities: ['chat'] },
      });
      expect(posted.status).toBe(200);
      const read = await request(stack.api.url, 'GET', `/v1/agent/${posted.body.id}`, { headers: auth });
      expect(read.status).toBe(200);
      const stable = ({ meta: _meta, ...rest }: Record<string, unknown>) => rest;
      expect(stable(read.body)).toEqual(stable(posted.body));

      await forget(agentRequestWorkflowId(posted.body.id));
      const later = await request(stack.api.url, 'GET', `/v1/agent/${posted.body.id}`, { headers: auth });
      expect(later.status).toBe(200);
      expect(stable(later.body)).toEqual(stable(posted.body));
    },
    SLOW,
  );

  it(
    'GET /v1/agent/{id} shows a paused request with its tool calls after the workflow has left Temporal',
    async () => {
      const { auth } = await stack.fixtures.project({ credits: 20 });
      const tool = {
        name: 'lookup',
        description: 'Looks something up',
        parameters: { type: 'object', properties: { q: { type: 'string' } } },
      };
      const posted = await request(stack.api.url, 'POST', '/v1/agent', {
        headers: auth,
        body: { message: 'please lookup {"q":"x"}', tools: [tool] },
      });
      expect(posted.body.status).toBe('requires_tool_outputs');
      await forget(agentRequestWorkflowId(posted.body.id));
      const read = await request(stack.api.url, 'GET', `/v1/agent/${posted.body.id}`, { headers: auth });
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({
        id: posted.body.id,
        status: 'requires_tool_outputs',
        tool_calls: posted.body.tool_calls,
        usage: posted.body.usage,
      });
    },
    SLOW,
  );

  it(
    'GET /v1/sessions/{id} and GET /v1/sessions answer after the session workflow has left Temporal',
    async () => {
      const { auth } = await stack.fixtures.project({ credits: 20 });
      const created = await request(stack.api.url, 'POST', '/v1/sessions', { headers: auth });
      expect(created.status).toBe(200);
      const id = created.body.id as string;
      const answered = await request(stack.api.url, 'POST', `/v1/sessions/${id}/messages`, {
        headers: auth,
        body: { message: 'hello session' },
      });
      expect(answered.status).toBe(200);
      const read = await request(stack.api.url, 'GET', `/v1/sessions/${id}`, { headers: auth });
      expect(read.body).toMatchObject({ id, status: 'active', message_count: 2 });

      await forget(sessionWorkflowId(id));
      await forget(agentRequestWorkflowId(answered.body.id));
      expect((await request(stack.api.url, 'GET', `/v1/sessions/${id}`, { headers: auth })).body).toMatchObject({
        id,
        status: 'active',
        message_count: 2,
      });
      const list = await request(stack.api.url, 'GET', '/v1/sessions', { headers: auth });
      expect(list.body.data).toEqual([expect.objectContaining({ id, message_count: 2 })]);
      const message = await request(stack.api.url, 'GET', `/v1/agent/${answered.body.id}`, { headers: auth });
      expect(message.status).toBe(200);
      expect(message.body).toMatchObject({ id: answered.body.id, status: 'completed', message: answered.body.message });
    },
    SLOW,
  );
});
