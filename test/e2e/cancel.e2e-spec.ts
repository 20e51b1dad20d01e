import { randomUUID } from 'node:crypto';
import { DEFAULT_CAPABILITY_SURCHARGES } from '#libs/contracts';
import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { request } from '../support/http.js';
import { readSse } from '../support/sse.js';

const lookup = {
  name: 'lookup',
  description: 'Look up',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
};
/** Long enough that the model is still "thinking" when the test cancels; the call is aborted. */
const SLOW = 15_000;

/** POST /v1/agent/{id}/cancel (DESIGN.md section 9) over the real stack. */
describe('POST /v1/agent/{id}/cancel', () => {
  const stack = e2eStack({ name: 'cancel' });

  const project = () =>
    stack.fixtures.project({
      credits: 20,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' },
    });
  const balance = async (projectId: string) => (await stack.fixtures.accounts.findProject(projectId)).creditBalance;
  const cancel = (id: string, headers: Record<string, string>) =>
    request(stack.api.url, 'POST', `/v1/agent/${id}/cancel`, { headers });
  /** The id of the project's request whose model call is in flight (its reservation is made and
   * the model server has received `calls` calls in all). */
  const running = async (projectId: string, calls: number): Promise<string> => {
    let id = '';
    await eventually(async () => {
      const rows: { request_id: string }[] = await stack.fixtures.db.query(
        `select request_id from credit_ledger where project_id = $1 and kind = 'reserve'`,
        [projectId],
      );
      expect(rows).toHaveLength(1);
      expect(stack.models.requests.length).toBeGreaterThanOrEqual(calls);
      id = rows[0]!.request_id;
    });
    return id;
  };

  beforeEach(() => {
    stack.models.clearReplies();
    stack.models.requests.length = 0;
  });

  it('cancels a running request before the model answered: nothing charged, the waiting caller gets the cancelled stop', async () => {
    const { project: p, auth } = await project();
    stack.models.reply({ content: 'too late', delayMs: SLOW });
    const original = request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'go', capabilities: ['chat', 'code'] },
    });
    const id = await running(p.id, 1);
    const res = await cancel(id, auth);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id,
      object: 'agent.response',
      status: 'cancelled',
      message: '',
      usage: { credits_this_request: 0, credits_remaining: 20 },
    });
    expect(res.headers.get('x-request-id')).toBe(id);
    expect((await original).body).toMatchObject({ id, status: 'cancelled' });
    expect(await balance(p.id)).toBe(20);
    // The read shows what the cancel answered: the status and the (here empty) partial message.
    expect((await request(stack.api.url, 'GET', `/v1/agent/${id}`, { headers: auth })).body).toMatchObject({
      status: 'cancelled',
      message: '',
    });
    // Finished now: a second cancellation is refused.
    const again = await cancel(id, auth);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('request_not_cancellable');
  });

  it('charges 1 + the surcharges used when the model had answered before the cancellation', async () => {
    const { project: p, auth } = await project();
    stack.models.reply(
      { toolCalls: [{ name: 'run_javascript', arguments: { code: '6 * 7' } }] },
      { content: 'it is 42', delayMs: SLOW },
    );
    const original = request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'go', capabilities: ['chat', 'code'] },
    });
    const id = await running(p.id, 2);
    const res = await cancel(id, auth);
    const charge = 1 + DEFAULT_CAPABILITY_SURCHARGES.code;
    expect(res.body).toMatchObject({
      status: 'cancelled',
      capabilities_used: expect.arrayContaining(['chat', 'code']),
      usage: { credits_this_request: charge, credits_remaining: 20 - charge },
    });
    expect(await balance(p.id)).toBe(20 - charge);
    await original;
  });

  it("cancels a request paused for tool outputs: the pause's charge stands, its tool context is gone", async () => {
    const { project: p, auth } = await project();
    stack.models.reply({ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] });
    const paused = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'go', tools: [lookup] },
    });
    expect(paused.body.status).toBe('requires_tool_outputs');
    const key = { ...auth, 'idempotency-key': randomUUID() };
    const res = await cancel(paused.body.id, key);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: paused.body.id, status: 'cancelled', usage: { credits_this_request: 0 } });
    expect(res.body.tool_calls).toBeUndefined();
    expect(await balance(p.id)).toBe(20 - paused.body.usage.credits_this_request);
    // The same cancellation sent again with its key gets the same answer, though the request has finished.
    const replay = await cancel(paused.body.id, key);
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(res.body);
    const late = await request(stack.api.url, 'POST', `/v1/agent/${paused.body.id}/tool-outputs`, {
      headers: auth,
      body: {
        tool_outputs: [{ tool_call_id: paused.body.tool_calls[0].id, output: 'late' }],
        _compute_instance: paused.body._compute_instance,
      },
    });
    expect(late.body.error.code).toBe('context_expired');
  });

  it("refuses a finished request (409), an unknown one and another project's (404), recording nothing", async () => {
    const { auth } = await project();
    const other = await project();
    stack.models.reply({ content: 'done' });
    const done = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'go' } });
    expect(done.body.status).toBe('completed');
    const finished = await cancel(done.body.id, auth);
    expect(finished.status).toBe(409);
    expect(finished.body.error).toMatchObject({
      code: 'request_not_cancellable',
      docs: expect.stringContaining('/docs/errors#request_not_cancellable'),
    });
    for (const [id, headers] of [
      [randomUUID(), auth],
      ['not-a-uuid', auth],
      [done.body.id, other.auth],
    ] as const) {
      const res = await cancel(id, headers);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('request_not_found');
    }
  });

  it('ends a stream open on the request with an error event of code request_cancelled', async () => {
    const { project: p, auth } = await project();
    stack.models.reply({ content: 'a slow stream', delayMs: SLOW });
    const stream = readSse(`${stack.api.url}/v1/agent`, {
      method: 'POST',
      headers: auth,
      body: { message: 'go', stream: true },
    });
    const id = await running(p.id, 1);
    expect((await cancel(id, auth)).body.status).toBe('cancelled');
    const events = (await stream).events;
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { code: 'request_cancelled' } });
    expect(events.filter((e) => e.event === 'done')).toEqual([]);
  });
});
