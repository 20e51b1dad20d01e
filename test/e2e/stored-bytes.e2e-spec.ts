import { e2eStack } from '../support/e2e-stack.js';
import { request } from '../support/http.js';

const KB100 = 'x'.repeat(100 * 1024);
const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/**
 * Issue 44: tool outputs over 4 KB are stored (blobs) like a request's input files, but only
 * admission counted stored bytes: a paused request took 10 MB in 5 submissions while the project's
 * count stayed 0. They count now against the same cap on input bytes a day (DESIGN.md section 10,
 * "one tenant cannot hurt another"), refused as admission refuses, over the real stack.
 */
describe('stored bytes of tool outputs', () => {
  const stack = e2eStack({
    name: 'stored-bytes',
    env: { MAS_PLAN_CAPS: JSON.stringify({ starter: { inputBytesPerDay: 250 * 1024 } }) },
  });

  const storedBytes = async (projectId: string): Promise<number> =>
    Number(
      (
        (await stack.fixtures.db.query(`select bytes from stored_bytes_of_day($1)`, [projectId])) as [{ bytes: string }]
      )[0].bytes,
    );
  const blobsOf = async (projectId: string): Promise<number> =>
    ((await stack.fixtures.db.query(`select 1 from blobs where project_id = $1`, [projectId])) as unknown[]).length;
  const project = () =>
    stack.fixtures.project({
      plan: 'starter',
      credits: 20,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' },
    });
  const paused = async (auth: { authorization: string }) => {
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'Weather?', tools: [weatherTool] },
    });
    expect(res.body).toMatchObject({ status: 'requires_tool_outputs' });
    return res.body as { id: string; _compute_instance: string; tool_calls: { id: string }[] };
  };
  const submit = (auth: { authorization: string }, run: Awaited<ReturnType<typeof paused>>, output: string) =>
    request(stack.api.url, 'POST', `/v1/agent/${run.id}/tool-outputs`, {
      headers: auth,
      body: {
        tool_outputs: [{ tool_call_id: run.tool_calls[0]!.id, output }],
        _compute_instance: run._compute_instance,
      },
    });

  it("counts a paused request's large tool outputs against the cap, and refuses past it as admission does", async () => {
    const { project: p, auth } = await project();
    stack.models.clearReplies();
    const poll = { name: 'get_weather', arguments: { city: 'Oslo' } };
    stack.models.reply({ toolCalls: [poll] }, { toolCalls: [poll] }, { toolCalls: [poll] }, { content: 'Done.' });
    let run = await paused(auth);
    expect(await storedBytes(p.id)).toBe(0);
    for (const expected of [100 * 1024, 200 * 1024]) {
      const res = await submit(auth, run, KB100);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'requires_tool_outputs' });
      run = res.body;
      expect(await storedBytes(p.id)).toBe(expected);
    }
    expect(await blobsOf(p.id)).toBe(2);

    // Past the cap: 429 rate_limited with Retry-After, as admission answers; nothing stored.
    const past = await submit(auth, run, KB100);
    expect(past.status).toBe(429);
    expect(past.body.error).toMatchObject({ code: 'rate_limited', message: expect.stringContaining('bytes a day') });
    expect(Number(past.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await storedBytes(p.id)).toBe(200 * 1024);
    expect(await blobsOf(p.id)).toBe(2);
    // The same count holds back a request's input files.
    const files = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'a file', files: [{ name: 'a.txt', content: KB100 }] },
    });
    expect(files.status).toBe(429);
    // The request is still paused, and a small output (not stored) goes through.
    const small = await submit(auth, run, 'sunny');
    expect(small.status).toBe(200);
    expect(small.body).toMatchObject({ status: 'completed', message: 'Done.' });
    expect(await storedBytes(p.id)).toBe(200 * 1024);
  });

  it('refuses one submission over the whole cap with 413, and gives back the bytes of one the run refused', async () => {
    const { project: p, auth } = await project();
    stack.models.clearReplies();
    const calls = ['Oslo', 'Bergen', 'Tromso'].map((city) => ({ name: 'get_weather', arguments: { city } }));
    stack.models.reply({ toolCalls: calls });
    const run = await paused(auth);
    const over = await request(stack.api.url, 'POST', `/v1/agent/${run.id}/tool-outputs`, {
      headers: auth,
      body: {
        tool_outputs: run.tool_calls.map((c) => ({ tool_call_id: c.id, output: KB100 })),
        _compute_instance: run._compute_instance,
      },
    });
    expect(over.status).toBe(413);
    expect(over.body.error.code).toBe('payload_too_large');
    expect(await storedBytes(p.id)).toBe(0);
    expect(await blobsOf(p.id)).toBe(0);
    // A submission the run refuses (a call id it did not make) gives its bytes back with its blobs.
    const refused = await request(stack.api.url, 'POST', `/v1/agent/${run.id}/tool-outputs`, {
      headers: auth,
      body: {
        tool_outputs: [{ tool_call_id: 'call_unknown', output: KB100 }],
        _compute_instance: run._compute_instance,
      },
    });
    expect(refused.status).toBe(400);
    expect(await storedBytes(p.id)).toBe(0);
    expect(await blobsOf(p.id)).toBe(0);
  });

  it("counts a session message's large tool outputs the same way", async () => {
    const { project: p, auth } = await project();
    stack.models.clearReplies();
    const poll = { name: 'get_weather', arguments: { city: 'Oslo' } };
    stack.models.reply({ toolCalls: [poll] }, { toolCalls: [poll] }, { toolCalls: [poll] });
    const session = await request(stack.api.url, 'POST', '/v1/sessions', { headers: auth });
    expect(session.status).toBe(200);
    const first = await request(stack.api.url, 'POST', `/v1/sessions/${session.body.id}/messages`, {
      headers: auth,
      body: { message: 'Weather?', tools: [weatherTool] },
    });
    expect(first.body).toMatchObject({ object: 'session.message', status: 'requires_tool_outputs' });
    let run = first.body;
    for (const expected of [100 * 1024, 200 * 1024]) {
      const res = await submit(auth, run, KB100);
      expect(res.body).toMatchObject({ object: 'session.message', status: 'requires_tool_outputs' });
      run = res.body;
      expect(await storedBytes(p.id)).toBe(expected);
    }
    const past = await submit(auth, run, KB100);
    expect(past.status).toBe(429);
    expect(past.body.error.code).toBe('rate_limited');
    expect(await blobsOf(p.id)).toBe(2);
  });

  it('lets only as many concurrent submissions through as the cap holds', async () => {
    const { project: p, auth } = await project();
    stack.models.clearReplies();
    const poll = { name: 'get_weather', arguments: { city: 'Oslo' } };
    stack.models.reply({ toolCalls: [poll] }, { toolCalls: [poll] }, { toolCalls: [poll] });
    const runs = [await paused(auth), await paused(auth), await paused(auth)];
    stack.models.reply({ content: 'Done.' }, { content: 'Done.' }, { content: 'Done.' });
    const answers = await Promise.all(runs.map((run) => submit(auth, run, KB100)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 429]);
    expect(await storedBytes(p.id)).toBe(200 * 1024);
    expect(await blobsOf(p.id)).toBe(2);
  });
});
