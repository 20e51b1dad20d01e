import type { Client, Connection } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { agentRequestWorkflowId } from '#libs/contracts';
import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { request } from '../support/http.js';
import { readSse } from '../support/sse.js';
import { connectTemporal } from '../support/temporal.js';

const KB100 = 'x'.repeat(100 * 1024);

/**
 * Admission in the api (DESIGN.md section 10, issue 30) and the per-project caps (issue 28), over
 * the real stack: a refused request starts no workflow and stores nothing; each cap refuses with
 * its code and Retry-After, and gives its place back when the run or the stream ends.
 */
describe('admission in the api', () => {
  // Small caps on two plans, so each cap is reached by a few requests: `free` for the runs in
  // flight, `starter` for open streams and input bytes a day.
  const stack = e2eStack({
    name: 'admission',
    env: {
      MAS_PLAN_CAPS: JSON.stringify({
        free: { runsInFlight: 1 },
        starter: { openStreams: 1, inputBytesPerDay: 250 * 1024 },
      }),
    },
  });
  let connection: Connection;
  let temporal: Client;
  beforeAll(async () => {
    ({ connection, client: temporal } = await connectTemporal(stack.config));
  });
  afterAll(async () => {
    await connection.close();
  });

  const noWorkflow = async (requestId: string): Promise<void> => {
    await expect(temporal.workflow.getHandle(agentRequestWorkflowId(requestId)).describe()).rejects.toBeInstanceOf(
      WorkflowNotFoundError,
    );
  };
  const blobsOf = async (projectId: string): Promise<number> =>
    ((await stack.fixtures.db.query(`select 1 from blobs where project_id = $1`, [projectId])) as unknown[]).length;
  const ledgerOf = async (projectId: string): Promise<number> =>
    ((await stack.fixtures.db.query(`select 1 from credit_ledger where project_id = $1`, [projectId])) as unknown[])
      .length;
  const slowModel = (plan: 'free' | 'starter') =>
    stack.fixtures.project({
      plan,
      credits: 20,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' },
    });

  it('refuses a project without credits with 402 before any workflow starts, and stores none of its files (issue 28)', async () => {
    const { project, auth } = await stack.fixtures.project({ credits: 0 });
    const files = Array.from({ length: 9 }, (_, i) => ({ name: `f${i}.txt`, content: KB100 }));
    for (const stream of [false, true]) {
      const res = await request(stack.api.url, 'POST', '/v1/agent', {
        headers: auth,
        body: { message: 'hi', files, stream },
      });
      expect(res.status).toBe(402);
      expect(res.body.error.code).toBe('insufficient_credits');
      const requestId = res.headers.get('x-request-id')!;
      expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
      await noWorkflow(requestId);
    }
    expect(await blobsOf(project.id)).toBe(0);
    expect(await ledgerOf(project.id)).toBe(0);
  });

  it('refuses a used-up quota with 429 and Retry-After before any workflow starts', async () => {
    const { project, auth } = await stack.fixtures.project({ plan: 'free', credits: 20 });
    await stack.fixtures.db.query(`update projects set requests_used = 100 where id = $1`, [project.id]);
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'hi', files: [{ name: 'a.txt', content: 'abc' }] },
    });
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('quota_exceeded');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    await noWorkflow(res.headers.get('x-request-id')!);
    expect(await blobsOf(project.id)).toBe(0);
    expect(await ledgerOf(project.id)).toBe(0);
  });

  it('refuses a session message without credits before the session starts a request, storing nothing', async () => {
    const { project, auth } = await stack.fixtures.project({ credits: 20 });
    const session = await request(stack.api.url, 'POST', '/v1/sessions', { headers: auth, body: {} });
    expect(session.status).toBe(200);
    await stack.fixtures.db.query(`update projects set credit_balance = 0 where id = $1`, [project.id]);
    const res = await request(stack.api.url, 'POST', `/v1/sessions/${session.body.id}/messages`, {
      headers: auth,
      body: { message: 'hi', files: [{ name: 'a.txt', content: KB100 }] },
    });
    expect(res.status).toBe(402);
    expect(res.body.error.code).toBe('insufficient_credits');
    await noWorkflow(res.headers.get('x-request-id')!);
    expect(await blobsOf(project.id)).toBe(0);
  });

  it('caps the runs in flight: 429 rate_limited with Retry-After while one runs, free again at its first stop', async () => {
    const { project, auth } = await slowModel('free');
    stack.models.reply({ content: 'slow answer', delayMs: 2_000 });
    const first = request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'one' } });
    await eventually(async () => {
      if ((await ledgerOf(project.id)) === 0) throw new Error('not admitted yet');
    });
    const second = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'two' } });
    expect(second.status).toBe(429);
    expect(second.body.error).toMatchObject({
      code: 'rate_limited',
      message: expect.stringContaining('runs in flight'),
    });
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0);
    await noWorkflow(second.headers.get('x-request-id')!);
    expect((await first).status).toBe(200);
    stack.models.reply({ content: 'next' });
    expect(
      (await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'three' } })).status,
    ).toBe(200);
  });

  it('caps the open streams of a project on this api: 429 rate_limited while one is open, free again once it closed', async () => {
    const { auth } = await slowModel('starter');
    stack.models.reply({ content: 'slow stream', delayMs: 2_000 });
    const first = readSse(`${stack.api.url}/v1/agent`, {
      method: 'POST',
      headers: auth,
      body: { message: 'one', stream: true },
    });
    await eventually(async () => {
      const second = await request(stack.api.url, 'POST', '/v1/agent', {
        headers: auth,
        body: { message: 'two', stream: true },
      });
      if (second.status !== 429) throw new Error(`the first stream is not open yet (${second.status})`);
      expect(second.body.error).toMatchObject({
        code: 'rate_limited',
        message: expect.stringContaining('streams open'),
      });
      expect(second.headers.get('retry-after')).toBe('1');
    });
    const done = await first;
    expect(done.status).toBe(200);
    expect(done.events.at(-1)?.event).toBe('done');
    stack.models.reply({ content: 'next stream' });
    const again = await readSse(`${stack.api.url}/v1/agent`, {
      method: 'POST',
      headers: auth,
      body: { message: 'three', stream: true },
    });
    expect(again.status).toBe(200);
    expect(again.events.at(-1)?.event).toBe('done');
  });

  it('caps the input bytes of a day: 429 with Retry-After past it, 413 for one request over it, nothing stored for either', async () => {
    const { project, auth } = await stack.fixtures.project({ plan: 'starter', credits: 20 });
    const file = (name: string) => ({ name, content: KB100 });
    const ok = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'two files', files: [file('a.txt'), file('b.txt')] },
    });
    expect(ok.status).toBe(200);
    expect(await blobsOf(project.id)).toBe(2);
    const past = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'one more', files: [file('c.txt')] },
    });
    expect(past.status).toBe(429);
    expect(past.body.error).toMatchObject({ code: 'rate_limited', message: expect.stringContaining('bytes a day') });
    expect(Number(past.headers.get('retry-after'))).toBeGreaterThan(0);
    const over = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'too much', files: [file('d.txt'), file('e.txt'), file('f.txt')] },
    });
    expect(over.status).toBe(413);
    expect(over.body.error.code).toBe('payload_too_large');
    expect(await blobsOf(project.id)).toBe(2);
    // A request without files is not held back by it.
    expect(
      (await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'no files' } })).status,
    ).toBe(200);
  });
});
