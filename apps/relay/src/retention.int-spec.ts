import { randomUUID } from 'node:crypto';
import { testConfig } from '../../../test/support/config.js';
import { Fixtures } from '../../../test/support/fixtures.js';
import { pruneAll, RETENTION_RULES } from './retention.js';

const config = testConfig();

/** Every table that grows with traffic is pruned by its rule, and only what has passed it. */
describe('retention', () => {
  let fixtures: Fixtures;
  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
  });
  afterAll(async () => {
    await fixtures.close();
  });

  it('deletes old published outbox rows, processed marks, idempotency keys, rate-limit hits and settled ledger rows; keeps the rest', async () => {
    const { project } = await fixtures.project({ credits: 10 });
    const db = fixtures.db;
    const old = (days: number) => new Date(Date.now() - days * 86_400_000);
    const [oldSent, oldUnsent, newSent] = [randomUUID(), randomUUID(), randomUUID()];
    for (const [id, created, published] of [
      [oldSent, old(8), old(8)],
      [oldUnsent, old(8), null],
      [newSent, old(1), old(1)],
    ] as const) {
      const payload = { specversion: '1.0', id, type: 'mas.retention-test.v1', source: 'test', data: {} };
      await db.query(
        `insert into outbox (event_id, topic, key, payload, created_at, published_at) values ($1, 'mas.events.v1', 'retention-test', $4, $2, $3)`,
        [id, created, published, JSON.stringify(payload)],
      );
    }
    const [oldMark, newMark] = [randomUUID(), randomUUID()];
    const projection = `retention-test-${randomUUID()}`;
    await db.query(
      `insert into projection_processed (projection, event_id, processed_at) values ($4, $1, $2), ($4, $3, now())`,
      [oldMark, old(31), newMark, projection],
    );
    await db.query(
      `insert into rate_limit_hits (project_id, at) values ($1, now() - interval '5 minutes'), ($1, now())`,
      [project.id],
    );
    const [settledOld, openOld] = [randomUUID(), randomUUID()];
    await db.query(
      `insert into credit_ledger (request_id, kind, project_id, credits, created_at) values ($1, 'reserve', $3, 3, $4), ($1, 'settle', $3, 1, $4), ($2, 'reserve', $3, 3, $4)`,
      [settledOld, openOld, project.id, old(401)],
    );

    // The unsent row must not be published by a relay another test runs meanwhile, nor stay: it
    // is a valid CloudEvent, deleted at the end.
    const results = await pruneAll(db, config);
    expect(results.filter((r) => r.error)).toEqual([]);
    expect(results.map((r) => r.table).sort()).toEqual(RETENTION_RULES.map((r) => r.table).sort());

    const outbox: { event_id: string }[] = await db.query(
      `select event_id from outbox where event_id = any($1::uuid[])`,
      [[oldSent, oldUnsent, newSent]],
    );
    expect(outbox.map((r) => r.event_id).sort()).toEqual([oldUnsent, newSent].sort());
    const marks: { event_id: string }[] = await db.query(
      `select event_id from projection_processed where projection = $1`,
      [projection],
    );
    expect(marks.map((r) => r.event_id)).toEqual([newMark]);
    expect(await db.query(`select 1 from rate_limit_hits where project_id = $1`, [project.id])).toHaveLength(1);
    const ledger: { request_id: string }[] = await db.query(
      `select request_id from credit_ledger where request_id = any($1::uuid[])`,
      [[settledOld, openOld]],
    );
    // An open reservation is never pruned, however old: the reconciler settles it first.
    expect(ledger.map((r) => r.request_id)).toEqual([openOld]);
    await db.query(`delete from outbox where event_id = any($1::uuid[])`, [[oldUnsent, newSent]]);
    await db.query(`delete from credit_ledger where request_id = $1`, [openOld]);
    await db.query(`delete from projection_processed where projection = $1`, [projection]);
  });
});
