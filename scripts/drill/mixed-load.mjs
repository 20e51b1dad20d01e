// What customers do, each driven to its end through the public api: one-shot requests, tool rounds,
// sessions, streams, cancels and background runs. The soak (`npm run drill -- --soak <minutes>`)
// runs them over many projects for a long time; the noisy-neighbour phase uses them as the
// well-behaved project's load. Every answer's credits are recorded as the client was told them, so
// the money check can compare them with the ledger.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { jsonOf, parseSseBlock, send } from '../bench/lib/http.mjs';

export const SCENARIOS = ['one-shot', 'tool-round', 'session', 'stream', 'cancel', 'background'];

/** The custom tool of tool rounds (the scripted model calls it when the message names it). */
export const lookup = {
  name: 'lookup',
  description: 'Look something up',
  parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
};
/** The scripted model streams a word every 10 ms: this takes it about 3 s. */
const LONG_MESSAGE = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');

/**
 * The client of one project: retries a call after Retry-After on 429 `rate_limited` and after a
 * short pause on no answer, 502 or 503 (with the same Idempotency-Key when the call has one), as a
 * careful client does. Every other answer is final.
 */
export class ProjectClient {
  constructor({ agent, apis, key, projectId }) {
    Object.assign(this, { agent, apis, key, projectId, calls: 0, retries: 0, statuses: new Map() });
    /** request id -> credits_this_request as first told (continuations add 0; checked). */
    this.told = new Map();
    this.problems = [];
  }
  get api() {
    const live = this.apis.filter((a) => !a.proc?.exited);
    return (live.length ? live : this.apis)[this.calls % Math.max(live.length, 1)];
  }
  async call(
    method,
    path,
    { body, idempotent = method === 'POST', sse, timeoutMs = 60_000, deadlineMs = 120_000 } = {},
  ) {
    const headers = { authorization: `Bearer ${this.key}`, ...(idempotent ? { 'idempotency-key': randomUUID() } : {}) };
    const until = performance.now() + deadlineMs;
    for (;;) {
      this.calls++;
      const res = await send({
        agent: this.agent,
        method,
        url: `${this.api.url}${path}`,
        headers,
        body,
        timeoutMs,
        sse,
      });
      this.statuses.set(res.status, (this.statuses.get(res.status) ?? 0) + 1);
      const json = sse && res.status === 200 ? undefined : jsonOf(res);
      const retryable =
        res.status === 0 ||
        res.status === 502 ||
        res.status === 503 ||
        (res.status === 429 && json?.error?.code === 'rate_limited');
      if (!retryable || performance.now() > until) return { ...res, json };
      this.retries++;
      await sleep(res.status === 429 ? Number(res.headers['retry-after'] ?? 1) * 1000 : 300);
    }
  }
  /** Records what the client was told a request cost; a second answer for the same id must agree. */
  tell(id, credits, { continuation = false } = {}) {
    if (id === undefined || credits === undefined) return;
    if (continuation) {
      if (credits !== 0) this.problems.push(`continuation of ${id} was charged ${credits}`);
      return;
    }
    const first = this.told.get(id);
    if (first === undefined) this.told.set(id, credits);
    else if (first !== credits) this.problems.push(`${id} was told ${first} and then ${credits}`);
  }
  expect(what, res, status) {
    if (res.status === status) return true;
    this.problems.push(`${what}: ${res.status} ${res.error ?? res.body.slice(0, 200)}`);
    return false;
  }

  async run(kind) {
    switch (kind) {
      case 'one-shot': {
        const res = await this.call('POST', '/v1/agent', {
          body: { message: 'soak one-shot', capabilities: ['chat'] },
        });
        if (this.expect(kind, res, 200)) this.tell(res.json.id, res.json.usage.credits_this_request);
        return res;
      }
      case 'tool-round': {
        const paused = await this.call('POST', '/v1/agent', {
          body: { message: 'lookup {"q":"soak"}', tools: [lookup] },
        });
        if (!this.expect(kind, paused, 200)) return paused;
        this.tell(paused.json.id, paused.json.usage.credits_this_request);
        if (paused.json.status !== 'requires_tool_outputs') return paused;
        const outputs = {
          tool_outputs: paused.json.tool_calls.map((c) => ({ tool_call_id: c.id, output: 'found' })),
          _compute_instance: paused.json._compute_instance,
        };
        const done = await this.call('POST', `/v1/agent/${paused.json.id}/tool-outputs`, { body: outputs });
        if (this.expect(`${kind} outputs`, done, 200))
          this.tell(paused.json.id, done.json.usage.credits_this_request, { continuation: true });
        return done;
      }
      case 'session': {
        const session = await this.call('POST', '/v1/sessions', { body: {} });
        if (!this.expect(kind, session, 200)) return session;
        let last = session;
        for (const message of ['first message', 'second message']) {
          last = await this.call('POST', `/v1/sessions/${session.json.id}/messages`, {
            body: { message, capabilities: ['chat'] },
          });
          if (this.expect(`${kind} message`, last, 200)) this.tell(last.json.id, last.json.usage.credits_this_request);
        }
        const ended = await this.call('DELETE', `/v1/sessions/${session.json.id}`, { idempotent: false });
        this.expect(`${kind} end`, ended, 200);
        return last;
      }
      case 'stream': {
        const res = await this.call('POST', '/v1/agent', {
          body: { message: 'soak stream of a few words', capabilities: ['chat'], stream: true },
          sse: { isToken: (e) => e.event === 'token' },
        });
        if (!this.expect(kind, res, 200)) return res;
        const events = res.body
          .split(/\r?\n\r?\n/)
          .map(parseSseBlock)
          .filter(Boolean);
        const done = events.find((e) => e.event === 'done');
        if (!done) this.problems.push(`${kind}: no done event (last: ${events.at(-1)?.text?.slice(0, 200)})`);
        else this.tell(String(res.headers['x-request-id']), done.json?.usage?.credits_this_request);
        return res;
      }
      case 'cancel': {
        const started = await this.call('POST', '/v1/agent', {
          body: { message: LONG_MESSAGE, capabilities: ['chat'], background: true },
        });
        if (!this.expect(kind, started, 200)) return started;
        await sleep(500);
        const cancelled = await this.call('POST', `/v1/agent/${started.json.id}/cancel`);
        if (cancelled.status === 409) return this.finalOf(started.json.id, kind);
        if (this.expect(`${kind} cancel`, cancelled, 200))
          this.tell(started.json.id, cancelled.json.usage.credits_this_request);
        return cancelled;
      }
      case 'background': {
        const started = await this.call('POST', '/v1/agent', {
          body: { message: 'soak background', capabilities: ['chat'], background: true },
        });
        if (!this.expect(kind, started, 200)) return started;
        return this.finalOf(started.json.id, kind);
      }
      default:
        throw new Error(`unknown scenario ${kind}`);
    }
  }
  /** Polls GET /v1/agent/{id} until the run has ended, and records its credits. */
  async finalOf(id, kind) {
    for (let i = 0; i < 120; i++) {
      const res = await this.call('GET', `/v1/agent/${id}`, { idempotent: false });
      if (res.status === 200 && res.json.status !== 'in_progress') {
        this.tell(id, res.json.usage.credits_this_request);
        return res;
      }
      if (res.status !== 200 && res.status !== 404) return this.expect(`${kind} read`, res, 200) && res;
      await sleep(1000);
    }
    this.problems.push(`${kind}: ${id} still running after 2 minutes`);
    return undefined;
  }
}

/**
 * The money invariant over `projects` (each `{ id, told }`): no reservation open, every settled
 * charge is what its client was told (and nothing charged that no client was told of), each
 * project's balance is what was added minus its settled charges, every charge has exactly one usage
 * event on the topic (`usage.byId`), and the usage projection counted each charge once. Waits,
 * bounded, for runs still settling, the relay and the projector.
 */
export async function moneyProblems({ db, usage, projects, added }) {
  const ids = projects.map((p) => p.id);
  const problems = [];
  let open = Infinity;
  for (let i = 0; i < 240 && open > 0; i++) {
    [{ n: open }] = await db.query(
      `select count(*)::int as n from credit_ledger r where r.kind = 'reserve' and r.project_id = any($1) and not exists (select 1 from credit_ledger s where s.request_id = r.request_id and s.kind = 'settle')`,
      [ids],
    );
    if (open > 0) await sleep(500);
  }
  if (open > 0) problems.push(`${open} reservation(s) still open`);
  const charges = await db.query(
    `select request_id::text as id, credits from credit_ledger where kind = 'settle' and project_id = any($1)`,
    [ids],
  );
  const settled = new Map(charges.map((c) => [c.id, c.credits]));
  const told = new Map(projects.flatMap((p) => [...p.told]));
  const mismatched = [...told].filter(([id, credits]) => (settled.get(id) ?? 0) !== credits);
  const untold = charges.filter((c) => c.credits > 0 && !told.has(c.id));
  if (mismatched.length)
    problems.push(
      `${mismatched.length} request(s) charged other than told, e.g. ${mismatched[0][0]}: told ${mismatched[0][1]}, settled ${settled.get(mismatched[0][0])}`,
    );
  if (untold.length) problems.push(`${untold.length} charge(s) no client was told of, e.g. ${untold[0].id}`);
  const balances = await db.query(
    `select p.id::text, p.credit_balance as balance, coalesce((select sum(credits) from credit_ledger s where s.project_id = p.id and s.kind = 'settle'), 0)::int as settled from projects p where p.id = any($1)`,
    [ids],
  );
  const balanceOff = balances.filter((b) => b.balance !== added - b.settled).length;
  if (balanceOff) problems.push(`${balanceOff} balance(s) not what was added minus the settled charges`);
  // Usage events: each charge once on the topic (the relay may be down a while: wait, bounded).
  const paid = charges.filter((c) => c.credits > 0);
  let lost = Infinity;
  let doubled = 0;
  let copies = 0;
  for (let i = 0; i < 120; i++) {
    const events = [...usage.byId.values()].filter((e) => ids.includes(e.project) && e.credits > 0);
    const perRequest = new Map();
    for (const e of events) perRequest.set(e.request, (perRequest.get(e.request) ?? 0) + e.credits);
    lost = paid.filter((c) => !perRequest.has(c.id)).length;
    doubled = [...perRequest].filter(([id, credits]) => settled.get(id) !== credits).length;
    copies = events.reduce((n, e) => n + e.copies - 1, 0);
    if (lost === 0 && doubled === 0) break;
    await sleep(500);
  }
  if (lost || doubled) problems.push(`usage events: ${lost} lost, ${doubled} doubled`);
  // The projection: each charge counted once (the projector may be down a while: wait, bounded).
  let projectionOff;
  try {
    for (let i = 0; i < 120; i++) {
      const [{ credits }] = await db.query(
        `select coalesce(sum(credits), 0)::int as credits from usage_totals where project_id = any($1)`,
        [ids],
      );
      projectionOff = credits - paid.reduce((n, c) => n + c.credits, 0);
      if (projectionOff === 0) break;
      await sleep(500);
    }
  } catch (e) {
    projectionOff = `n/a (${e.message})`;
  }
  if (projectionOff !== 0) problems.push(`the usage projection is off by ${projectionOff} credits`);
  return {
    problems,
    charges: paid.length,
    credits: paid.reduce((n, c) => n + c.credits, 0),
    counts: {
      open,
      chargedOtherThanTold: mismatched.length + untold.length,
      balanceOff,
      usageLost: lost,
      usageDoubled: doubled,
      usageCopies: copies,
      projectionOff,
    },
  };
}
