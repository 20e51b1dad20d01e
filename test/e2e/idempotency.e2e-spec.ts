import { randomUUID } from 'node:crypto';
import type { Client, Connection } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { agentRequestWorkflowId, WORKFLOW_TASK_TIMEOUT_MS } from '#libs/contracts';
import { startApi, type RunningApi } from '../support/api.js';
import { testConfig } from '../support/config.js';
import { e2eStack } from '../support/e2e-stack.js';
import { request, type JsonResponse } from '../support/http.js';
import { readSse } from '../support/sse.js';
import { connectTemporal } from '../support/temporal.js';
import { startWorker } from '../support/worker.js';

// Idempotency-Key on every POST (DESIGN.md section 9): a real api and worker on their own task
// queue, the real PostgreSQL and Temporal, the scripted model.
const config = testConfig();

const lookup = {
  name: 'lookup',
  description: 'Look up',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
};

/** The answer without what is measured per delivery (the time it took). */
const withoutDuration = (body: { meta?: Record<string, unknown> }) => ({
  ...body,
  meta: { ...body.meta, duration_ms: 0 },
});

describe('Idempotency-Key', () => {
  const stack = e2eStack({ name: 'idempotency' });
  let connection: Connection;
  let temporal: Client;

  beforeAll(async () => {
    ({ connection, client: temporal } = await connectTemporal(config));
  });
  afterAll(async () => {
    await connection?.close();
  });

  const post = (
    path: string,
    auth: Record<string, string>,
    key: string | undefined,
    body?: unknown,
    base = stack.api,
  ) =>
    request(base.url, 'POST', path, {
      headers: { ...auth, ...(key === undefined ? {} : { 'idempotency-key': key }) },
      body,
    });
  const newKey = () => `key-${randomUUID()}`;
  /** The run id of the request's workflow: a second run under the same id would change it. */
  const runIdOf = async (requestId: string) =>
    (await temporal.workflow.getHandle(agentRequestWorkflowId(requestId)).describe()).runId;
  const reserves = async (projectId: string): Promise<number> =>
    (
      (await stack.fixtures.db.query(
        `select count(*)::int as n from credit_ledger where project_id = $1 and kind = 'reserve'`,
        [projectId],
      )) as { n: number }[]
    )[0]!.n;
  const recordedKeys = async (projectId: string): Promise<number> =>
    (
      (await stack.fixtures.db.query(`select count(*)::int as n from idempotency_keys where project_id = $1`, [
        projectId,
      ])) as { n: number }[]
    )[0]!.n;
  const expectSameAnswer = (again: JsonResponse, first: JsonResponse) => {
    expect({ status: again.status, body: again.body }).toEqual({ status: first.status, body: first.body });
    expect(again.headers.get('x-request-id')).toBe(first.headers.get('x-request-id'));
  };

  describe('POST /v1/agent', () => {
    it('replays a completed request for the same parsed body; another body or another endpoint is 409', async () => {
      const { auth, project } = await stack.fixtures.project({ credits: 10 });
      const key = newKey();
      const first = await post('/v1/agent', auth, key, { message: 'charge me once', capabilities: ['chat'] });
      expect(first.status).toBe(200);
      expect(first.headers.get('x-request-id')).toBe(first.body.id);
      const runId = await runIdOf(first.body.id);
      const again = await post('/v1/agent', auth, key, { capabilities: ['chat'], message: 'charge me once' });
      expectSameAnswer(again, first);
      expect(await runIdOf(first.body.id)).toBe(runId);
      expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(9);

      const otherBody = await post('/v1/agent', auth, key, { message: 'something else' });
      expect(otherBody.status).toBe(409);
      expect(otherBody.body.error).toEqual({
        code: 'idempotency_conflict',
        message: expect.any(String),
        docs: `${config.publicBaseUrl}/docs/errors#idempotency_conflict`,
      });
      const otherEndpoint = await post('/v1/sessions', auth, key);
      expect(otherEndpoint.status).toBe(409);
      expect(otherEndpoint.body.error.code).toBe('idempotency_conflict');
      expect(await reserves(project.id)).toBe(1);
    });

    it('replays a failed first answer (402) and never runs the request again, even once credits are added', async () => {
      const { auth, project } = await stack.fixtures.project({ credits: 0 });
      const key = newKey();
      const body = { message: 'too poor', capabilities: ['chat'] };
      const first = await post('/v1/agent', auth, key, body);
      expect(first.status).toBe(402);
      expect(first.body.error.code).toBe('insufficient_credits');
      const requestId = first.headers.get('x-request-id')!;
      expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
      // Refused at the api's admission: no workflow was started (DESIGN.md section 10).
      const noWorkflow = () =>
        expect(temporal.workflow.getHandle(agentRequestWorkflowId(requestId)).describe()).rejects.toBeInstanceOf(
          WorkflowNotFoundError,
        );
      await noWorkflow();

      await stack.fixtures.accounts.addCredits(project.id, 10);
      const again = await post('/v1/agent', auth, key, body);
      expectSameAnswer(again, first);
      await noWorkflow();
      expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(10);
    });

    it('replays a run that failed on the model configuration, even once the configuration is fixed', async () => {
      const { auth, project } = await stack.fixtures.project({ credits: 10, model: null });
      const key = newKey();
      const body = { message: 'no model yet', capabilities: ['chat'] };
      const first = await post('/v1/agent', auth, key, body);
      expect({ status: first.status, code: first.body.error.code }).toEqual({
        status: 503,
        code: 'service_unavailable',
      });
      const requestId = first.headers.get('x-request-id')!;
      const runId = await runIdOf(requestId);
      await stack.fixtures.accounts.setModel(project.id, { provider: 'scripted', model: 'scripted-test' });
      expectSameAnswer(await post('/v1/agent', auth, key, body), first);
      expect(await runIdOf(requestId)).toBe(runId);
      expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(10);
    });

    it('answers a retry that finds the run finished but no saved answer from the closed workflow, without a second run', async () => {
      const { auth, project } = await stack.fixtures.project({ credits: 10 });
      const key = newKey();
      const body = { message: 'finished before the answer was saved', capabilities: ['chat'] };
      const first = await post('/v1/agent', auth, key, body);
      expect(first.status).toBe(200);
      const runId = await runIdOf(first.body.id);
      // As if the api had died between the run's completion and the saving of its answer.
      await stack.fixtures.db.query(`update idempotency_keys set response = null where project_id = $1 and key = $2`, [
        project.id,
        key,
      ]);

      const again = await post('/v1/agent', auth, key, body);
      expect(again.status).toBe(200);
      expect(withoutDuration(again.body)).toEqual(withoutDuration(first.body));
      expect(await runIdOf(first.body.id)).toBe(runId);
      expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(9);
      // From now on the answer is saved: later retries are byte for byte the same.
      expectSameAnswer(await post('/v1/agent', auth, key, body), again);
    });

    it('gives ten concurrent duplicates one run and ten identical answers', async () => {
      const { auth, project } = await stack.fixtures.project({ credits: 10 });
      const key = newKey();
      const body = { message: 'ten at once', capabilities: ['chat'] };
      const answers = await Promise.all(Array.from({ length: 10 }, () => post('/v1/agent', auth, key, body)));
      expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
      for (const a of answers) expectSameAnswer(a, answers[0]!);
      expect(await reserves(project.id)).toBe(1);
      expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(9);
      // Every run ever made under the request's workflow id (visibility may lag: wait for this one).
      const runId = await runIdOf(answers[0]!.body.id);
      let runs: string[] = [];
      for (let i = 0; i < 100 && !runs.includes(runId); i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 100));
        runs = [];
        for await (const run of temporal.workflow.list({
          query: `WorkflowId = '${agentRequestWorkflowId(answers[0]!.body.id)}'`,
        }))
          runs.push(run.runId);
      }
      expect(runs).toEqual([runId]);
    });

    it('replays a streamed request: the stored events again from the first, one run', async () => {
      const { auth, project } = await stack.fixtures.project({ credits: 10 });
      const key = newKey();
      const body = { message: 'stream this one, please, in several words', stream: true, capabilities: ['chat'] };
      const stream = () =>
        readSse(`${stack.api.url}/v1/agent`, { method: 'POST', headers: { ...auth, 'idempotency-key': key }, body });
      // Two at once (the second joins the first run), then one after it finished.
      const [a, b] = await Promise.all([stream(), stream()]);
      const c = await stream();
      const id = a.headers.get('x-request-id')!;
      expect(a.events.at(-1)!.event).toBe('done');
      expect(a.events.length).toBeGreaterThan(2);
      for (const other of [b, c]) {
        expect(other.status).toBe(200);
        expect(other.headers.get('x-request-id')).toBe(id);
        expect(other.events).toEqual(a.events);
      }
      expect(await reserves(project.id)).toBe(1);
      expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(9);
      // The same key without stream is another body.
      expect((await post('/v1/agent', auth, key, { ...body, stream: false })).status).toBe(409);
    });

    it('refuses a bad key with 400 invalid_body and records nothing', async () => {
      const { auth, project } = await stack.fixtures.project({ credits: 10 });
      for (const key of ['', 'x'.repeat(256), 'tab\there']) {
        for (const body of [{ message: 'hi' }, { message: 'hi', stream: true }]) {
          const res = await post('/v1/agent', auth, key, body);
          expect({ key, status: res.status, code: res.body?.error?.code }).toEqual({
            key,
            status: 400,
            code: 'invalid_body',
          });
        }
        for (const path of ['/v1/sessions', `/v1/agent/${randomUUID()}/tool-outputs`]) {
          const res = await post(
            path,
            auth,
            key,
            path.endsWith('tool-outputs')
              ? { tool_outputs: [{ tool_call_id: 'call_1', output: 'x' }], _compute_instance: 'x' }
              : undefined,
          );
          expect({ key, path, status: res.status, code: res.body?.error?.code }).toEqual({
            key,
            path,
            status: 400,
            code: 'invalid_body',
          });
        }
      }
      // 255 characters is the longest key taken.
      expect((await post('/v1/agent', auth, 'k'.repeat(255), { message: 'hi' })).status).toBe(200);
      expect(await recordedKeys(project.id)).toBe(1);
      expect(await reserves(project.id)).toBe(1);
    });

    it('records nothing for a request refused by its body or its capabilities', async () => {
      const { auth, project } = await stack.fixtures.project({ credits: 10, capabilities: ['chat'] });
      const key = newKey();
      expect((await post('/v1/agent', auth, key, { message: '' })).status).toBe(400);
      expect((await post('/v1/agent', auth, key, { message: 'hi', capabilities: ['code'] })).status).toBe(403);
      expect(await recordedKeys(project.id)).toBe(0);
      // The key is still free for a good request.
      expect((await post('/v1/agent', auth, key, { message: 'hi' })).status).toBe(200);
    });
  });

  describe('tool outputs', () => {
    it('replays a paused request, and a retried accepted submission gets the answer it got (with or without a key)', async () => {
      const { auth, project } = await stack.fixtures.project({ credits: 10 });
      const key = newKey();
      const body = { message: 'lookup {"q":"x"}', tools: [lookup] };
      const paused = await post('/v1/agent', auth, key, body);
      expect(paused.body.status).toBe('requires_tool_outputs');
      expectSameAnswer(await post('/v1/agent', auth, key, body), paused);

      const path = `/v1/agent/${paused.body.id}/tool-outputs`;
      const outputs = {
        tool_outputs: [{ tool_call_id: paused.body.tool_calls[0].id, output: 'found it' }],
        _compute_instance: paused.body._compute_instance,
      };
      const outputsKey = newKey();
      // Two at once: the second attaches to the first submission.
      const [resumed, twin] = await Promise.all([
        post(path, auth, outputsKey, outputs),
        post(path, auth, outputsKey, outputs),
      ]);
      expect(resumed.status).toBe(200);
      expect(resumed.body.status).toBe('completed');
      expectSameAnswer(twin, resumed);
      // After the request has finished: with the key, and without any key.
      expectSameAnswer(await post(path, auth, outputsKey, outputs), resumed);
      const keyless = await post(path, auth, undefined, outputs);
      expect(keyless.status).toBe(200);
      expect(withoutDuration(keyless.body)).toEqual(withoutDuration(resumed.body));
      // Another submission with that key is a conflict; another submission without one is too late.
      expect(
        (
          await post(path, auth, outputsKey, {
            ...outputs,
            tool_outputs: [{ ...outputs.tool_outputs[0], output: 'other' }],
          })
        ).status,
      ).toBe(409);
      const other = await post(path, auth, undefined, {
        ...outputs,
        tool_outputs: [{ ...outputs.tool_outputs[0], output: 'other' }],
      });
      expect(other.status).toBe(404);
      expect(other.body.error.code).toBe('context_expired');
      expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(9);
    });

    it('answers a retried submission without a key the same while the request is still running', async () => {
      const { auth } = await stack.fixtures.project({ credits: 10 });
      const paused = await post('/v1/agent', auth, undefined, { message: 'lookup {"q":"x"}', tools: [lookup] });
      const path = `/v1/agent/${paused.body.id}/tool-outputs`;
      const first = {
        tool_outputs: [{ tool_call_id: paused.body.tool_calls[0].id, output: 'found' }],
        _compute_instance: paused.body._compute_instance,
      };
      const [a, b] = await Promise.all([post(path, auth, undefined, first), post(path, auth, undefined, first)]);
      expect(a.status).toBe(200);
      expect(withoutDuration(b.body)).toEqual(withoutDuration(a.body));
      expect(await post(path, auth, undefined, first).then((r) => withoutDuration(r.body))).toEqual(
        withoutDuration(a.body),
      );
    });
  });

  describe('sessions', () => {
    it('creates one session for one key and replays it', async () => {
      const { auth, project } = await stack.fixtures.project({ credits: 10 });
      const key = newKey();
      const answers = await Promise.all(Array.from({ length: 5 }, () => post('/v1/sessions', auth, key)));
      expect(answers[0]!.status).toBe(200);
      for (const a of answers) expectSameAnswer(a, answers[0]!);
      expectSameAnswer(await post('/v1/sessions', auth, key), answers[0]!);
      const listed = await request(stack.api.url, 'GET', '/v1/sessions', { headers: auth });
      expect(listed.body.data.map((s: { id: string }) => s.id)).toEqual([answers[0]!.body.id]);
      const slots: unknown[] = await stack.fixtures.db.query(`select 1 from session_slots where project_id = $1`, [
        project.id,
      ]);
      expect(slots).toHaveLength(1);
      // A body on session creation is part of the request.
      expect((await post('/v1/sessions', auth, key, { purpose: 'other' })).status).toBe(409);
    });

    it('does not save a creation refused at the session limit: a retry with the key creates the session once a slot is free', async () => {
      const { auth } = await stack.fixtures.project({ credits: 10 });
      const sessions = [];
      for (let i = 0; i < 10; i++) sessions.push((await post('/v1/sessions', auth, undefined)).body.id as string);
      const key = newKey();
      const refused = await post('/v1/sessions', auth, key);
      expect({ status: refused.status, code: refused.body.error?.code }).toEqual({
        status: 429,
        code: 'session_limit_reached',
      });
      expect((await request(stack.api.url, 'DELETE', `/v1/sessions/${sessions[0]}`, { headers: auth })).status).toBe(
        200,
      );
      const created = await post('/v1/sessions', auth, key);
      expect(created.status).toBe(200);
      expectSameAnswer(await post('/v1/sessions', auth, key), created);
    });

    it('replays a session message; the conversation takes it once', async () => {
      const { auth, project } = await stack.fixtures.project({ credits: 10 });
      const session = await post('/v1/sessions', auth, undefined);
      const key = newKey();
      const path = `/v1/sessions/${session.body.id}/messages`;
      const body = { message: 'remember this once', capabilities: ['chat'] };
      const [a, b, c] = await Promise.all([
        post(path, auth, key, body),
        post(path, auth, key, body),
        post(path, auth, key, body),
      ]);
      expect(a.status).toBe(200);
      expect(a.body).toMatchObject({ object: 'session.message', session_id: session.body.id, status: 'completed' });
      expectSameAnswer(b, a);
      expectSameAnswer(c, a);
      expectSameAnswer(await post(path, auth, key, body), a);
      expect(
        (await request(stack.api.url, 'GET', `/v1/sessions/${session.body.id}`, { headers: auth })).body.message_count,
      ).toBe(2);
      expect(await reserves(project.id)).toBe(1);
      expect((await post(path, auth, key, { ...body, message: 'another' })).status).toBe(409);
    });

    it('replays a streamed session message from the first event', async () => {
      const { auth } = await stack.fixtures.project({ credits: 10 });
      const session = await post('/v1/sessions', auth, undefined);
      const key = newKey();
      const stream = () =>
        readSse(`${stack.api.url}/v1/sessions/${session.body.id}/messages`, {
          method: 'POST',
          headers: { ...auth, 'idempotency-key': key },
          body: { message: 'a streamed message in a session', stream: true },
        });
      const a = await stream();
      const b = await stream();
      expect(a.events.at(-1)!.event).toBe('done');
      expect(b.headers.get('x-request-id')).toBe(a.headers.get('x-request-id'));
      expect(b.events).toEqual(a.events);
      // The session answers its messages in order and updates its count before a JSON answer: one
      // more message makes 4 if the streamed one entered the conversation once.
      expect(
        (await post(`/v1/sessions/${session.body.id}/messages`, auth, undefined, { message: 'and one more' })).status,
      ).toBe(200);
      expect(
        (await request(stack.api.url, 'GET', `/v1/sessions/${session.body.id}`, { headers: auth })).body.message_count,
      ).toBe(4);
    });
  });

  it('is documented on every POST of the OpenAPI document', async () => {
    const { auth } = await stack.fixtures.project();
    const doc = (await request(stack.api.url, 'GET', '/v1/openapi.json', { headers: auth })).body;
    for (const path of ['/v1/agent', '/v1/agent/{id}/tool-outputs', '/v1/sessions', '/v1/sessions/{id}/messages']) {
      const post = doc.paths[path].post;
      expect({
        path,
        header: post.parameters.find(
          (p: { in: string; name: string }) => p.in === 'header' && p.name === 'Idempotency-Key',
        ),
      }).toEqual({
        path,
        header: expect.objectContaining({
          required: false,
          schema: { type: 'string', minLength: 1, maxLength: 255, pattern: expect.any(String) },
          description: expect.stringContaining('idempotency_conflict'),
        }),
      });
      expect(post.responses['409'].description).toContain('`idempotency_conflict`');
    }
  });

  describe('without a worker', () => {
    const idle = { TEMPORAL_TASK_QUEUE: `e2e-idempotency-idle-${randomUUID()}`, AGENT_PICKUP_TIMEOUT_MS: '1500' };
    let lonely: RunningApi;
    beforeAll(async () => {
      lonely = await startApi(idle);
    });
    afterAll(async () => {
      await lonely?.close();
    });

    it('answers 502 compute_unavailable with the request id; the request is left to the workflow, and a retry joins it', async () => {
      const { auth, project } = await stack.fixtures.project({ credits: 10 });
      const key = newKey();
      const body = { message: 'nobody is listening', capabilities: ['chat'] };
      const startedAt = Date.now();
      const first = await post('/v1/agent', auth, key, body, lonely);
      expect(first.status).toBe(502);
      expect(first.body.error.code).toBe('compute_unavailable');
      const requestId = first.headers.get('x-request-id')!;
      expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
      const handle = temporal.workflow.getHandle(agentRequestWorkflowId(requestId));
      // Not terminated: the workflow itself refuses to run once its acceptBy has passed.
      expect((await handle.describe()).status.name).toBe('RUNNING');
      const again = await post('/v1/agent', auth, key, body, lonely);
      expect(again.status).toBe(502);
      expect(again.headers.get('x-request-id')).toBe(requestId);

      // A worker comes after the deadline (the pickup time and one workflow task timeout after the
      // start): the run starts too late and fails at once, before admitting anything.
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, startedAt + 1500 + WORKFLOW_TASK_TIMEOUT_MS + 500 - Date.now())),
      );
      const late = await startWorker(idle);
      try {
        await handle.result();
        const outcome = await post('/v1/agent', auth, key, body, lonely);
        expect({ status: outcome.status, code: outcome.body.error?.code }).toEqual({
          status: 502,
          code: 'compute_unavailable',
        });
        expect(outcome.headers.get('x-request-id')).toBe(requestId);
        expectSameAnswer(await post('/v1/agent', auth, key, body, lonely), outcome);
        expect((await handle.describe()).status.name).toBe('COMPLETED');
      } finally {
        await late.close();
      }
      // The api reserved before starting it (DESIGN.md section 10); the late run gave it all back.
      const ledger: { kind: string; credits: number; reason: string }[] = await stack.fixtures.db.query(
        `select kind, credits, reason from credit_ledger where project_id = $1 order by kind`,
        [project.id],
      );
      expect(ledger).toEqual([
        { kind: 'reserve', credits: 1, reason: 'admission' },
        { kind: 'settle', credits: 0, reason: 'release' },
      ]);
      expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(10);
    });
  });
});
