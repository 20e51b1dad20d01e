import { randomUUID } from 'node:crypto';
import { TOPICS, USAGE_EVENT_TYPE } from '#libs/contracts';
import { createKafka } from '#libs/kafka';
import { startApi } from '../support/api.js';
import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { request } from '../support/http.js';
import { collect } from '../support/kafka.js';

const tool = {
  name: 'lookup',
  description: 'Look up',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
};

describe('metering', () => {
  const stack = e2eStack({ name: 'metering', pipeline: true });

  it('reports credits and quota truthfully across a sequence, with continuations at 0', async () => {
    const { auth, project } = await stack.fixtures.project({ credits: 20, capabilities: ['chat', 'code'] });
    const one = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'hi', capabilities: ['chat'] },
    });
    expect(one.body.usage).toMatchObject({ credits_this_request: 1, credits_remaining: 19 });
    expect(one.headers.get('x-ratelimit-remaining')).toBe('49999');
    const two = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'run_javascript {"code":"1"}', capabilities: ['code'] },
    });
    expect(two.body.usage).toMatchObject({ credits_this_request: 3, credits_remaining: 16 });
    expect(two.headers.get('x-ratelimit-remaining')).toBe('49998');
    const paused = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'lookup {"q":"x"}', tools: [tool] },
    });
    expect(paused.body.usage).toMatchObject({ credits_this_request: 1, credits_remaining: 15 });
    const resumed = await request(stack.api.url, 'POST', `/v1/agent/${paused.body.id}/tool-outputs`, {
      headers: auth,
      body: {
        tool_outputs: [{ tool_call_id: paused.body.tool_calls[0].id, output: 'found' }],
        _compute_instance: paused.body._compute_instance,
      },
    });
    expect(resumed.body.usage).toMatchObject({ credits_this_request: 0, credits_remaining: 15 });
    expect(resumed.headers.get('x-ratelimit-remaining')).toBe('49997');
    expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(15);
  });

  it('publishes a usage event for every leg on mas.usage.v1, and projects it', async () => {
    const reader = await collect(createKafka(stack.config, 'usage-test'), TOPICS.usage);
    try {
      const { auth, project } = await stack.fixtures.project({ credits: 20 });
      const a = await request(stack.api.url, 'POST', '/v1/agent', {
        headers: auth,
        body: { message: 'first request here', capabilities: ['chat'] },
      });
      const paused = await request(stack.api.url, 'POST', '/v1/agent', {
        headers: auth,
        body: { message: 'lookup {"q":"y"}', tools: [tool] },
      });
      const resumed = await request(stack.api.url, 'POST', `/v1/agent/${paused.body.id}/tool-outputs`, {
        headers: auth,
        body: {
          tool_outputs: [{ tool_call_id: paused.body.tool_calls[0].id, output: 'ok' }],
          _compute_instance: paused.body._compute_instance,
        },
      });
      const mine = (m: Record<string, unknown>[]) => m.filter((x) => x.projectid === project.id);
      await reader.waitFor((m) => mine(m).length >= 3);
      const events = mine(reader.messages);
      expect(events.every((e) => e.type === USAGE_EVENT_TYPE && e.specversion === '1.0' && e._key === project.id)).toBe(
        true,
      );
      const byRequest = (id: string) =>
        events.filter((e) => (e.data as { request_id: string }).request_id === id).map((e) => e.data);
      expect(byRequest(a.body.id)).toEqual([
        expect.objectContaining({
          project_id: project.id,
          kind: 'initial',
          status: 'completed',
          credits: 1,
          capabilities: ['chat'],
          plan: 'pro',
        }),
      ]);
      const [aUsage] = byRequest(a.body.id) as { input_tokens: number; output_tokens: number }[];
      expect(aUsage!.input_tokens + aUsage!.output_tokens).toBe(a.body.usage.tokens_used);
      expect(byRequest(paused.body.id)).toEqual([
        expect.objectContaining({ kind: 'initial', status: 'requires_tool_outputs', credits: 1 }),
        expect.objectContaining({ kind: 'continuation', status: 'completed', credits: 0 }),
      ]);
      const total = a.body.usage.tokens_used + paused.body.usage.tokens_used + resumed.body.usage.tokens_used;

      // The projector catches up on its own time: wait for the read models, bounded.
      await eventually(async () => {
        const rows = await stack.fixtures.db.query(
          `select requests, credits, (input_tokens + output_tokens)::int as tokens from usage_totals where project_id = $1`,
          [project.id],
        );
        expect(rows).toEqual([{ requests: 2, credits: 2, tokens: total }]);
      });
      await eventually(async () => {
        const log: { status: string }[] = await stack.fixtures.db.query(
          `select status from request_log where project_id = $1`,
          [project.id],
        );
        expect(log.map((r) => r.status)).toEqual(['completed', 'completed']);
      });
    } finally {
      await reader.stop();
    }
  });

  it('lets exactly one of several parallel requests take the last unit of quota', async () => {
    const small = await startApi({ ...stack.env, MAS_PLANS: '{"starter":{"monthlyQuota":3,"capabilities":["chat"]}}' });
    try {
      const { auth } = await stack.fixtures.project({ plan: 'starter', capabilities: ['chat'], credits: 100 });
      for (let i = 0; i < 2; i++)
        expect(
          (await request(small.url, 'POST', '/v1/agent', { headers: auth, body: { message: `m${i}` } })).status,
        ).toBe(200);
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          request(small.url, 'POST', '/v1/agent', { headers: auth, body: { message: `p${i}` } }),
        ),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, 429, 429, 429, 429, 429]);
      const refused = results.find((r) => r.status === 429)!;
      expect(refused.body.error.code).toBe('quota_exceeded');
      expect(refused.body.error.message).toContain('3 requests');
    } finally {
      await small.close();
    }
  });

  it('lets exactly 60 of 75 concurrent requests through the rate limit, across two api processes', async () => {
    const second = await startApi(stack.env);
    try {
      const { auth } = await stack.fixtures.project();
      const id = randomUUID();
      const results = await Promise.all(
        Array.from({ length: 75 }, (_, i) =>
          request(i % 2 === 0 ? stack.api.url : second.url, 'GET', `/v1/agent/${id}`, { headers: auth }),
        ),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 404)).toHaveLength(60);
      expect(statuses.filter((s) => s === 429)).toHaveLength(15);
    } finally {
      await second.close();
    }
  });

  it('shares one rate limit between two api processes', async () => {
    const second = await startApi(stack.env);
    try {
      const { auth } = await stack.fixtures.project();
      const id = randomUUID();
      for (let i = 0; i < 60; i++) {
        const target = i % 2 === 0 ? stack.api.url : second.url;
        expect((await request(target, 'GET', `/v1/agent/${id}`, { headers: auth })).status).toBe(404);
      }
      for (const target of [stack.api.url, second.url]) {
        const res = await request(target, 'GET', `/v1/agent/${id}`, { headers: auth });
        expect(res.status).toBe(429);
        expect(res.body.error.code).toBe('rate_limited');
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
    } finally {
      await second.close();
    }
  });
});
