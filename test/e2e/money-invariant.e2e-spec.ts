import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { TOPICS } from '#libs/contracts';
import { createKafka } from '#libs/kafka';
import { request } from '../support/http.js';
import { collect } from '../support/kafka.js';
import type { ScriptedReply } from '../support/model-server.js';
import { e2eStack } from '../support/e2e-stack.js';
/** Sequences per run of `npm test`; MONEY_RUNS=50 for a longer search. */
const RUNS = Number(process.env.MONEY_RUNS ?? 3);
const SEED = Number(process.env.MONEY_SEED ?? 20261123);

const lookup = {
  name: 'lookup',
  description: 'Look up',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
};

/** One step a customer (or the network) takes. */
type Step =
  | { kind: 'run'; code: boolean; key: boolean }
  | { kind: 'fail'; key: boolean }
  | { kind: 'pause'; answer: boolean }
  | { kind: 'expire' }
  | { kind: 'retry'; code: boolean }
  | { kind: 'duplicates'; copies: number }
  | { kind: 'cancel'; paused: boolean; answered: boolean };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('run' as const), code: fc.boolean(), key: fc.boolean() }),
  fc.record({ kind: fc.constant('fail' as const), key: fc.boolean() }),
  fc.record({ kind: fc.constant('pause' as const), answer: fc.boolean() }),
  fc.record({ kind: fc.constant('expire' as const) }),
  fc.record({ kind: fc.constant('retry' as const), code: fc.boolean() }),
  fc.record({ kind: fc.constant('duplicates' as const), copies: fc.integer({ min: 2, max: 6 }) }),
  fc.record({ kind: fc.constant('cancel' as const), paused: fc.boolean(), answered: fc.boolean() }),
);

interface Seen {
  /** The credits_this_request of each request id's first answer, as clients received it. */
  readonly firstCharge: Map<string, number>;
  /** Every answer's credits, for continuations (must be 0) and replays (must equal the first). */
  readonly answers: { id: string; credits: number; continuation: boolean }[];
}

/**
 * The money invariant (DESIGN.md section 9) over random sequences of requests, failures, pauses,
 * retries with Idempotency-Key and concurrent duplicates, against the real stack: afterwards the
 * project's balance, its ledger, the usage events on Kafka and the credits its clients were told
 * all agree, and no reservation is left open.
 */
describe('the money invariant', () => {
  /** Paused requests expire after 2 seconds here (TOOL_OUTPUTS_TIMEOUT_MS), so expiries fit the test. */
  const stack = e2eStack({ name: 'money', env: { TOOL_OUTPUTS_TIMEOUT_MS: '2000' }, pipeline: true });
  let usage: Awaited<ReturnType<typeof collect>>;

  beforeAll(async () => {
    usage = await collect(createKafka(stack.config, 'money-invariant'), TOPICS.usage);
  });
  afterAll(async () => {
    await usage.stop();
  });

  /** Runs one step; the replies the model server gives are queued just before the call. */
  async function run(s: Step, auth: Record<string, string>, projectId: string, seen: Seen): Promise<void> {
    // A request refused before it ran (402) leaves its replies queued: each step starts afresh.
    stack.models.clearReplies();
    const record = (body: { id?: string; usage?: { credits_this_request: number } }, continuation = false): void => {
      if (!body.id || !body.usage) return;
      seen.answers.push({ id: body.id, credits: body.usage.credits_this_request, continuation });
      if (!continuation && !seen.firstCharge.has(body.id))
        seen.firstCharge.set(body.id, body.usage.credits_this_request);
    };
    const codeTurn: ScriptedReply[] = [
      { toolCalls: [{ name: 'run_javascript', arguments: { code: '6 * 7' } }] },
      { content: 'it is 42' },
    ];
    const headers = (key: boolean): Record<string, string> =>
      key ? { ...auth, 'idempotency-key': randomUUID() } : auth;
    switch (s.kind) {
      case 'run': {
        if (s.code) stack.models.reply(...codeTurn);
        else stack.models.reply({ content: 'hello' });
        record(
          (
            await request(stack.api.url, 'POST', '/v1/agent', {
              headers: headers(s.key),
              body: { message: 'go', capabilities: ['chat', 'code'] },
            })
          ).body,
        );
        return;
      }
      case 'fail': {
        stack.models.reply({ status: 401, errorMessage: 'bad key' });
        const r = await request(stack.api.url, 'POST', '/v1/agent', {
          headers: headers(s.key),
          body: { message: 'go', capabilities: ['chat', 'code'] },
        });
        expect(r.status).not.toBe(200);
        return;
      }
      case 'pause': {
        stack.models.reply({ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] });
        const paused = await request(stack.api.url, 'POST', '/v1/agent', {
          headers: auth,
          body: { message: 'go', tools: [lookup] },
        });
        record(paused.body);
        if (!s.answer || paused.body.status !== 'requires_tool_outputs') return;
        stack.models.reply({ content: 'thanks' });
        const resumed = await request(stack.api.url, 'POST', `/v1/agent/${paused.body.id}/tool-outputs`, {
          headers: auth,
          body: {
            tool_outputs: [{ tool_call_id: paused.body.tool_calls[0].id, output: 'found' }],
            _compute_instance: paused.body._compute_instance,
          },
        });
        record(resumed.body, true);
        return;
      }
      case 'expire': {
        stack.models.reply({ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] });
        const paused = await request(stack.api.url, 'POST', '/v1/agent', {
          headers: auth,
          body: { message: 'go', tools: [lookup] },
        });
        record(paused.body);
        if (paused.body.status !== 'requires_tool_outputs') return;
        await new Promise((r) => setTimeout(r, 2500));
        const late = await request(stack.api.url, 'POST', `/v1/agent/${paused.body.id}/tool-outputs`, {
          headers: auth,
          body: {
            tool_outputs: [{ tool_call_id: paused.body.tool_calls[0].id, output: 'late' }],
            _compute_instance: paused.body._compute_instance,
          },
        });
        expect(late.body.error?.code).toBe('context_expired');
        return;
      }
      case 'retry': {
        const h = headers(true);
        if (s.code) stack.models.reply(...codeTurn);
        else stack.models.reply({ content: 'hello' });
        const first = await request(stack.api.url, 'POST', '/v1/agent', {
          headers: h,
          body: { message: 'go', capabilities: ['chat', 'code'] },
        });
        // The client did not hear the answer and sends the same request again.
        const again = await request(stack.api.url, 'POST', '/v1/agent', {
          headers: h,
          body: { message: 'go', capabilities: ['chat', 'code'] },
        });
        expect(again.status).toBe(first.status);
        expect(again.body).toEqual({
          ...first.body,
          ...(first.body.meta ? { meta: { ...first.body.meta, duration_ms: again.body.meta.duration_ms } } : {}),
        });
        record(first.body);
        record(again.body);
        return;
      }
      case 'cancel': {
        if (s.paused) {
          stack.models.reply({ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] });
          const paused = await request(stack.api.url, 'POST', '/v1/agent', {
            headers: auth,
            body: { message: 'go', tools: [lookup] },
          });
          record(paused.body);
          if (paused.body.status !== 'requires_tool_outputs') return;
          const cancelled = await request(stack.api.url, 'POST', `/v1/agent/${paused.body.id}/cancel`, {
            headers: auth,
          });
          if (cancelled.status === 409) {
            // The pause outlived TOOL_OUTPUTS_TIMEOUT_MS (2 s here) before the cancellation came
            // (a slow first workflow task on a busy machine): the request expired instead, which
            // charges no more than the cancellation would have.
            expect(cancelled.body.error.code).toBe('request_not_cancellable');
            expect(
              (await request(stack.api.url, 'GET', `/v1/agent/${paused.body.id}`, { headers: auth })).body.status,
            ).toBe('expired');
            return;
          }
          expect(cancelled.body.status).toBe('cancelled');
          record(cancelled.body, true);
          return;
        }
        // A slow model reply (after a code step when `answered`), cancelled mid-run.
        const calls = stack.models.requests.length + (s.answered ? 2 : 1);
        if (s.answered) stack.models.reply(codeTurn[0]!, { content: 'slow', delayMs: 15_000 });
        else stack.models.reply({ content: 'slow', delayMs: 15_000 });
        let answered = false;
        const original = request(stack.api.url, 'POST', '/v1/agent', {
          headers: auth,
          body: { message: 'go', capabilities: ['chat', 'code'] },
        }).finally(() => (answered = true));
        let id: string | undefined;
        // The request runs once its reservation is open and the model has been called (a request
        // refused for credits never gets there: it answers first).
        while (!id && !answered) {
          const open: { request_id: string }[] = await stack.fixtures.db.query(
            `select r.request_id from credit_ledger r where r.project_id = $1 and r.kind = 'reserve' and not exists (select 1 from credit_ledger s where s.request_id = r.request_id and s.kind = 'settle')`,
            [projectId],
          );
          if (open[0] && stack.models.requests.length >= calls) id = open[0].request_id;
          else await new Promise((r) => setTimeout(r, 50));
        }
        if (id) {
          const cancelled = await request(stack.api.url, 'POST', `/v1/agent/${id}/cancel`, { headers: auth });
          expect(cancelled.body.status).toBe('cancelled');
          record(cancelled.body);
        }
        record((await original).body);
        return;
      }
      case 'duplicates': {
        const h = headers(true);
        stack.models.reply({ content: 'once' });
        const answers = await Promise.all(
          Array.from({ length: s.copies }, () =>
            request(stack.api.url, 'POST', '/v1/agent', {
              headers: h,
              body: { message: 'go', capabilities: ['chat'] },
            }),
          ),
        );
        expect(new Set(answers.map((a) => a.status)).size).toBe(1);
        expect(new Set(answers.map((a) => a.body.id ?? a.body.error?.code)).size).toBe(1);
        for (const a of answers) record(a.body);
        return;
      }
    }
  }

  it('holds after any sequence of requests, failures, pauses, retries, duplicates and cancellations', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 3, max: 25 }),
        async (steps, credits) => {
          const { project, auth } = await stack.fixtures.project({
            credits,
            model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' },
          });
          const seen: Seen = { firstCharge: new Map(), answers: [] };
          for (const s of steps) await run(s, auth, project.id, seen);

          // Nothing runs now (paused requests settled at their pause, expired ones charge nothing
          // more): no reservation is open.
          const ledger: { request_id: string; kind: string; credits: number }[] = await stack.fixtures.db.query(
            `select request_id, kind, credits from credit_ledger where project_id = $1`,
            [project.id],
          );
          const settled = new Map(ledger.filter((r) => r.kind === 'settle').map((r) => [r.request_id, r.credits]));
          expect(ledger.filter((r) => r.kind === 'reserve').every((r) => settled.has(r.request_id))).toBe(true);

          // balance = credits added - settled charges
          const charged = [...settled.values()].reduce((a, b) => a + b, 0);
          expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(credits - charged);

          // What clients were told: each request's first answer is its settled charge; replays repeat
          // it; continuations are free.
          for (const a of seen.answers) {
            if (a.continuation) expect(a.credits).toBe(0);
            else expect(a.credits).toBe(seen.firstCharge.get(a.id));
          }
          const told = [...seen.firstCharge.values()].reduce((a, b) => a + b, 0);
          expect(told).toBe(charged);
          for (const [id, c] of seen.firstCharge) expect(settled.get(id) ?? 0).toBe(c);

          // Kafka: every settled charge has its usage event with the same amount, exactly once.
          const mine = (): { id: string; data: { request_id: string; credits: number } }[] => {
            const byId = new Map<string, { id: string; data: { request_id: string; credits: number } }>();
            for (const m of usage.messages)
              if (m.projectid === project.id)
                byId.set(m.id as string, m as unknown as { id: string; data: { request_id: string; credits: number } });
            return [...byId.values()];
          };
          const sum = (): number => mine().reduce((a, m) => a + m.data.credits, 0);
          await usage.waitFor(() => sum() >= charged, 30_000).catch(() => undefined);
          expect(sum()).toBe(charged);
          const perRequest = new Map<string, number>();
          for (const m of mine())
            perRequest.set(m.data.request_id, (perRequest.get(m.data.request_id) ?? 0) + m.data.credits);
          for (const [id, c] of settled) expect(perRequest.get(id) ?? 0).toBe(c);
        },
      ),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
  }, 300_000);
});
