import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { testConfig } from '../../../test/support/config.js';
import { Fixtures } from '../../../test/support/fixtures.js';
import { RATE_LIMIT_PER_MINUTE, rateLimitVerdict } from './rate-limit.js';

const config = testConfig();

/**
 * The rate limit's Retry-After is a promise (DESIGN.md section 11): a client that waits the
 * Retry-After it was given, and sends nothing else, is admitted. Over the real shared limiter
 * (PostgreSQL's `rate_limit_hit`), where every authenticated request counts whatever its answer
 * (DESIGN.md section 7), refused ones included, and several clients of one project share the
 * project's sliding minute (issue 44: a client that waited was told "Retry in 3 s" again).
 */
describe('the rate limit keeps its Retry-After (real PostgreSQL)', () => {
  let fixtures: Fixtures;
  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
  });
  afterAll(async () => {
    await fixtures.close();
  });

  it('admits two clients refused at once, each after the Retry-After it was told, their refusals counted', async () => {
    const { project, key } = await fixtures.project({ credits: 1 });
    // A full minute: 3 hits about to leave it, 57 that stay a little longer.
    await fixtures.db.query(
      `insert into rate_limit_hits (project_id, at)
         select $1::uuid, clock_timestamp() - interval '58.5 seconds' from generate_series(1, 3)
         union all select $1::uuid, clock_timestamp() - interval '57.5 seconds' from generate_series(1, 57)`,
      [project.id],
    );
    const send = async () => {
      const found = await fixtures.accounts.authenticateRequest(key);
      return rateLimitVerdict(found!.hits);
    };
    const client = async (): Promise<{ waited: number; allowed: boolean }> => {
      const refused = await send();
      expect(refused.allowed).toBe(false);
      await sleep(refused.retryAfterSeconds * 1000);
      return { waited: refused.retryAfterSeconds, allowed: (await send()).allowed };
    };
    const [a, b] = await Promise.all([client(), client()]);
    expect([a, b]).toEqual([
      { waited: expect.any(Number), allowed: true },
      { waited: expect.any(Number), allowed: true },
    ]);
  });

  it('keeps the hits of a flood of refused requests bounded, and the places it promised before', async () => {
    const project = randomUUID();
    const base = Date.now() + 20 * 86_400_000;
    const hit = async (at: number) => {
      const [row] = (await fixtures.db.query(`select n, retry_after from rate_limit_hit($1, $2)`, [
        project,
        new Date(base + at),
      ])) as [{ n: string; retry_after: number }];
      return rateLimitVerdict({ count: Number(row.n), retryAfterSeconds: row.retry_after });
    };
    for (let i = 0; i < RATE_LIMIT_PER_MINUTE; i++) expect((await hit(i)).allowed).toBe(true);
    // 400 refused requests within a second: the first 60 get places (two hits each), the rest none.
    const told: number[] = [];
    for (let i = 0; i < 400; i++) {
      const verdict = await hit(1_000 + i);
      expect(verdict.allowed).toBe(false);
      told.push(verdict.retryAfterSeconds);
    }
    const [rows] = (await fixtures.db.query(`select count(*)::int n from rate_limit_hits where project_id = $1`, [
      project,
    ])) as [{ n: number }];
    expect(rows.n).toBe(RATE_LIMIT_PER_MINUTE + 2 * RATE_LIMIT_PER_MINUTE);
    // Every one of the first 60 that comes back when told is admitted.
    const promised = told.slice(0, RATE_LIMIT_PER_MINUTE).map((s, i) => 1_000 + i + s * 1_000);
    for (const at of promised.sort((a, b) => a - b)) expect((await hit(at)).allowed).toBe(true);
  });

  /**
   * The property, over bursts from several clients of one project on a controlled clock (the
   * function's `p_now`). Each client sends its burst until its first 429, then sends nothing until
   * the Retry-After it was told has passed, and then one request, which reaches the limiter δ ≥ 0
   * after that moment (0: it waited exactly). Others go on meanwhile: the rest of their bursts,
   * admitted or refused, and their own retries. What is promised: that client's request is
   * admitted, unless a request it did not send was admitted between the moment it was told and
   * its arrival (inclusive: at the same instant the limiter takes one before the other). A client
   * that waited exactly (δ = 0) is so always admitted but for a request at that same instant.
   */
  type Burst = { start: number; gaps: number[]; latency: number };
  const bursts = (latency: fc.Arbitrary<number>) =>
    fc.array(
      fc.record({
        start: fc.integer({ min: 0, max: 30_000 }),
        // Steady senders (one request every `gap`, which fill a minute evenly: one hit leaves it at
        // a time) or irregular ones.
        gaps: fc.oneof(
          fc
            .tuple(fc.integer({ min: 200, max: 2_000 }), fc.integer({ min: 10, max: 90 }))
            .map(([gap, n]) => Array.from({ length: n }, () => gap)),
          fc.array(fc.integer({ min: 0, max: 1_500 }), { minLength: 1, maxLength: 60 }),
        ),
        latency,
      }),
      { minLength: 2, maxLength: 5 },
    );

  /** Five clients sending 90 requests 200 ms apart from the same moment: each is refused. */
  const FLOOD: Burst[] = Array.from({ length: 5 }, (_, i) => ({ start: i, gaps: Array(90).fill(200), latency: 0 }));

  interface Sent {
    client: number;
    at: number;
    allowed: boolean;
    retry?: { toldAt: number; promisedAt: number };
  }

  /** Plays the clients' bursts and retries against the limiter, in the order of their moments. */
  const play = async (clients: Burst[]): Promise<Sent[]> => {
    const project = randomUUID();
    // A clock of its own, well away from the real one and from other runs.
    const base = Date.now() + 10 * 86_400_000 + Math.floor(Math.random() * 1e9);
    type Due = { at: number; client: number; next: number; retry?: Sent['retry'] };
    const queue: Due[] = clients.map((c, client) => ({ at: c.start, client, next: 0 }));
    const sent: Sent[] = [];
    let order = 0;
    const orderOf = new Map<Due, number>();
    for (const d of queue) orderOf.set(d, order++);
    while (queue.length > 0) {
      queue.sort((x, y) => x.at - y.at || orderOf.get(x)! - orderOf.get(y)!);
      const due = queue.shift()!;
      const [row] = (await fixtures.db.query(`select n, oldest, retry_after from rate_limit_hit($1, $2)`, [
        project,
        new Date(base + due.at),
      ])) as [{ n: string; oldest: Date | null; retry_after: number }];
      const verdict = rateLimitVerdict({ count: Number(row.n), retryAfterSeconds: row.retry_after });
      sent.push({
        client: due.client,
        at: due.at,
        allowed: verdict.allowed,
        ...(due.retry ? { retry: due.retry } : {}),
      });
      if (due.retry) continue; // its one request after waiting
      const burst = clients[due.client]!;
      let next: Due | undefined;
      if (!verdict.allowed) {
        const promisedAt = due.at + verdict.retryAfterSeconds * 1000;
        next = {
          at: promisedAt + burst.latency,
          client: due.client,
          next: 0,
          retry: { toldAt: due.at, promisedAt },
        };
      } else if (due.next < burst.gaps.length - 1) {
        next = { at: due.at + burst.gaps[due.next]!, client: due.client, next: due.next + 1 };
      }
      if (next) {
        orderOf.set(next, order++);
        queue.push(next);
      }
    }
    return sent;
  };

  it('admits each client that waited its Retry-After, unless another admitted request came first', async () => {
    let retries = 0;
    await fc.assert(
      fc.asyncProperty(bursts(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1_500 }))), async (clients) => {
        const sent = await play(clients);
        for (const s of sent.filter((x) => x.retry)) {
          retries++;
          if (s.allowed) continue;
          const overtaken = sent.some(
            (o) => o.client !== s.client && o.allowed && o.at >= s.retry!.promisedAt && o.at <= s.at,
          );
          expect({ retry: s, overtaken }).toEqual({ retry: s, overtaken: true });
        }
      }),
      // Besides the random runs, ten that are sure to be refused (five steady clients at five
      // requests a second each), so the count below does not depend on the draw: it was 39 in
      // one run and 41-60 in others with the random runs alone.
      { numRuns: 50, examples: Array.from({ length: 10 }, () => [FLOOD]) },
    );
    // The bursts were refused often enough for the property to say something.
    expect(retries).toBeGreaterThan(40);
  });

  it('still admits at most 60 requests in any 60 s, refusals and promises included', async () => {
    await fc.assert(
      fc.asyncProperty(bursts(fc.constant(0)), async (clients) => {
        const sent = await play(clients);
        const admitted = sent.filter((s) => s.allowed).map((s) => s.at);
        for (const end of admitted) {
          const inWindow = admitted.filter((at) => at >= end - 60_000 && at <= end).length;
          expect(inWindow).toBeLessThanOrEqual(RATE_LIMIT_PER_MINUTE);
        }
        // Every client that waited exactly was admitted (nothing else can overtake it but a request
        // at the same instant).
        for (const s of sent.filter((x) => x.retry && !x.allowed)) {
          expect(sent.some((o) => o.client !== s.client && o.allowed && o.at === s.at)).toBe(true);
        }
      }),
      { numRuns: 30 },
    );
  });
});
