import { randomUUID } from 'node:crypto';
import type { StreamEvent } from '#libs/contracts';
import { testConfig } from '../../../test/support/config.js';
import { Fixtures } from '../../../test/support/fixtures.js';
import { StreamStore } from './stream-store.js';

const config = testConfig();
const HOUR = 3600;

/** Retention by request on the real PostgreSQL: a run's events live as long as the run, plus the
 * window after its end (DESIGN.md section 9). Ages are set on the rows, not waited for. */
describe('StreamStore retention', () => {
  let fixtures: Fixtures;
  let store: StreamStore;
  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    store = new StreamStore(fixtures.db, HOUR);
  });
  afterAll(async () => {
    await fixtures.close();
  });

  /** A request's stream whose events were written `ages` seconds ago (in seq order). */
  async function stream(projectId: string, events: readonly [StreamEvent['type'], number][]): Promise<string> {
    const id = randomUUID();
    await store.save([
      {
        requestId: id,
        projectId,
        events: events.map(([type], i) => ({
          seq: i + 1,
          type,
          data: type === 'token' ? { content: `t${i + 1} ` } : {},
        })),
      },
    ]);
    for (const [i, [, age]] of events.entries()) {
      await fixtures.db.query(
        `update stream_events set created_at = now() - make_interval(secs => $3) where request_id = $1 and seq = $2`,
        [id, i + 1, age],
      );
    }
    return id;
  }

  it("keeps a run's first events past the window while the run goes on or has just ended; deletes a finished or a long-silent run's whole stream", async () => {
    const { project } = await fixtures.project();
    const p = project.id;
    const running = await stream(p, [
      ['token', 2 * HOUR],
      ['token', 2 * HOUR],
    ]); // paused: silent since, not ended
    const endedRecently = await stream(p, [
      ['token', 3 * HOUR],
      ['token', 2 * HOUR],
      ['done', 60],
    ]);
    const ended = await stream(p, [
      ['token', 3 * HOUR],
      ['error', 2 * HOUR],
    ]);
    const abandoned = await stream(p, [['token', 26 * HOUR]]); // never ended, silent for longer than any run
    const events = async (id: string) => (await store.after(id, p, 0)).map((e) => e.type);

    // Reads refuse an expired stream at once, before the pruning.
    expect(await events(running)).toEqual(['token', 'token']);
    expect(await events(endedRecently)).toEqual(['token', 'token', 'done']);
    expect(await events(ended)).toEqual([]);
    expect(await events(abandoned)).toEqual([]);

    expect(await store.deleteExpired()).toBeGreaterThanOrEqual(3);
    const left: { request_id: string; n: number }[] = await fixtures.db.query(
      `select request_id, count(*)::int as n from stream_events where request_id = any($1::uuid[]) group by request_id`,
      [[running, endedRecently, ended, abandoned]],
    );
    expect(Object.fromEntries(left.map((r) => [r.request_id, r.n]))).toEqual({ [running]: 2, [endedRecently]: 3 });
    // The partial message of a cancelled call: its tokens from a seq on.
    expect(await store.tokenText(running, p, 2)).toBe('t2 ');
    expect(await store.tokenText(running, randomUUID(), 1)).toBe('');
    await fixtures.db.query(`delete from stream_events where request_id = any($1::uuid[])`, [[running, endedRecently]]);
  });
  it('deletes a backlog a page of old events at a time, passing over a run that still goes on', async () => {
    const { project } = await fixtures.project();
    const p = project.id;
    // The oldest events are a running run's: a page of them holds nothing to delete, and the next
    // page starts after them.
    const running = await stream(p, [
      ['token', 5 * HOUR],
      ['token', 5 * HOUR],
      ['token', 5 * HOUR],
      ['token', 5 * HOUR],
      ['token', 5 * HOUR],
    ]);
    const ended: string[] = [];
    for (let i = 0; i < 5; i++)
      ended.push(
        await stream(p, [
          ['token', 3 * HOUR],
          ['token', 3 * HOUR],
          ['done', 2 * HOUR],
        ]),
      );
    const statements: string[] = [];
    const recording = new StreamStore(
      new Proxy(fixtures.db, {
        get: (t, k) =>
          k === 'query'
            ? (sql: string, params?: unknown[]) => (statements.push(sql), t.query(sql, params))
            : Reflect.get(t, k),
      }),
      HOUR,
      4,
    );
    expect(await recording.deleteExpired()).toBeGreaterThanOrEqual(15);
    // 20 old events in pages of 4: the running run's page (nothing to delete), then the ended runs'
    // events over at least two more (a page deletes its runs' later events with them, so how many
    // pages depends on how the ages tie).
    expect(statements.filter((s) => s.trimStart().startsWith('delete')).length).toBeGreaterThanOrEqual(3);
    const left: { request_id: string }[] = await fixtures.db.query(
      `select distinct request_id from stream_events where request_id = any($1::uuid[])`,
      [[running, ...ended]],
    );
    expect(left.map((r) => r.request_id)).toEqual([running]);
    await fixtures.db.query(`delete from stream_events where request_id = $1`, [running]);
  });
});
