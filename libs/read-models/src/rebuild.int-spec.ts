import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { EVENT_TYPES, type SessionView } from '#libs/contracts';
import { EventStore, RequestStream, SessionStream, toCloudEvent, type CloudEvent } from '#libs/events';
import { createKafka } from '#libs/kafka';
import { dataSourceOptions } from '#libs/persistence';
import { testConfig } from '../../../test/support/config.js';
import { eventually } from '../../../test/support/eventually.js';
import { ProjectionRunner } from './projection-runner.js';
import { requestLogProjection } from './projections/request-log.projection.js';
import { sessionsProjection } from './projections/sessions.projection.js';
import { rebuildProjection } from './rebuild.js';

const config = testConfig();

/** `npm run cli -- projections rebuild`: new tables from the event store, swapped in, equal to
 * what the live projector built, with nothing the live projector applied meanwhile lost. */
describe('projection rebuild', () => {
  let db: DataSource;
  let runner: ProjectionRunner;
  const store = new EventStore();
  const sessions = new SessionStream(store);
  const requests = new RequestStream(store, sessions);
  beforeAll(async () => {
    db = new DataSource({ ...dataSourceOptions(config), logging: false });
    await db.initialize();
    runner = new ProjectionRunner(db, createKafka(config, 'rebuild-test'), [requestLogProjection, sessionsProjection]);
  });
  afterAll(async () => {
    await db.destroy();
  });

  /** What the relay publishes for a stream's events, applied as the live projector would. */
  async function projectLive(streamId: string): Promise<void> {
    for (const e of await store.readStream(db.manager, streamId)) {
      const event: CloudEvent<Record<string, unknown>> = toCloudEvent({
        id: e.eventId,
        type: e.type,
        subject: streamId,
        time: new Date(e.recordedAt),
        data: e.data,
        projectId: e.metadata.projectId,
        correlationId: e.metadata.correlationId,
        causationId: e.metadata.causationId,
        streamVersion: e.version,
      });
      for (const projection of [requestLogProjection, sessionsProjection]) await runner.handle(projection, event);
    }
  }

  it('rebuilds request_log and sessions from the event store into equal tables', async () => {
    const projectId = randomUUID();
    const requestId = randomUUID();
    const sessionId = randomUUID();
    const now = Date.now();
    await db.transaction(async (tx) => {
      await sessions.create(
        tx,
        { sessionId, projectId, createdAt: new Date(now), expiresAt: new Date(now + 1_800_000) },
        10,
      );
      await requests.accepted(tx, projectId, { requestId, creditsReserved: 3, requestsUsed: 1, creditsRemaining: 7 });
      await sessions.messageAccepted(tx, { sessionId, projectId, requestId });
      await requests.stop(
        tx,
        {
          requestId,
          projectId,
          sessionId,
          plan: 'pro',
          stop: 1,
          status: 'completed',
          capabilitiesUsed: ['chat'],
          surcharges: { chat: 0, research: 2, documents: 0, code: 2, data: 1, files: 0 },
          inputTokens: 5,
          outputTokens: 3,
          view: { message: 'hi', files: [] },
        },
        1,
        9,
      );
    });
    const view: SessionView = {
      sessionId,
      projectId,
      status: 'active',
      createdAt: now,
      lastActivityAt: now + 1000,
      expiresAt: now + 1_801_000,
      messageCount: 2,
      revision: 1,
      queuedMessages: 0,
    };
    await db.transaction((tx) => sessions.recorded(tx, view));
    await projectLive(`agent-request-${requestId}`);
    await projectLive(`session-${sessionId}`);
    const live = {
      request: await db.query(`select * from request_log where request_id = $1`, [requestId]),
      session: await db.query(`select * from sessions where id = $1`, [sessionId]),
    };
    expect(live.request).toEqual([expect.objectContaining({ status: 'completed', credits: 1, version: 2 })]);
    expect(live.session).toEqual([expect.objectContaining({ status: 'active', message_count: 2, version: 3 })]);

    // An event the live projector applies while the rebuild runs is in the swapped-in table too.
    const later: SessionView = { ...view, status: 'ended', expiresAt: now + 5000, revision: 2 };
    await db.transaction((tx) => sessions.recorded(tx, later));
    await projectLive(`session-${sessionId}`);

    await rebuildProjection(db, requestLogProjection, 'events');
    await rebuildProjection(db, sessionsProjection, 'events');
    expect(await db.query(`select * from request_log where request_id = $1`, [requestId])).toEqual(live.request);
    const session = await db.query(`select * from sessions where id = $1`, [sessionId]);
    expect(session).toEqual([expect.objectContaining({ status: 'ended', message_count: 2, version: 4 })]);
    // Marked processed: the live projector does not apply an event of the rebuild again.
    const ended = (await store.readStream(db.manager, `session-${sessionId}`)).find(
      (e) => e.type === EVENT_TYPES.sessionEnded,
    )!;
    expect(
      await db.query(`select 1 from projection_processed where projection = 'sessions' and event_id = $1`, [
        ended.eventId,
      ]),
    ).toHaveLength(1);
  });
  it('rebuilds the request log from the retention window without the rows retention pruned, and holds the live table only for the last catch-up and the renames', async () => {
    const projectId = randomUUID();
    const [recent, old, during] = [randomUUID(), randomUUID(), randomUUID()];
    const accept = (requestId: string) =>
      db.transaction((tx) =>
        requests.accepted(tx, projectId, { requestId, creditsReserved: 3, requestsUsed: 1, creditsRemaining: 7 }),
      );
    for (const requestId of [recent, old, during]) await accept(requestId);
    // A request last changed 40 days ago: retention pruned its row; a rebuild must not bring it back.
    await db.query(`update events set recorded_at = now() - interval '40 days' where stream_id = $1`, [
      `agent-request-${old}`,
    ]);
    await projectLive(`agent-request-${recent}`);

    // A live projector transaction applying an event of `during` stays open: the rebuild can do
    // everything up to its lock, and then waits for it.
    const live = db.createQueryRunner();
    await live.connect();
    await live.startTransaction();
    const [accepted] = await store.readStream(db.manager, `agent-request-${during}`);
    const event = toCloudEvent({
      id: accepted!.eventId,
      type: accepted!.type,
      subject: accepted!.streamId,
      time: new Date(accepted!.recordedAt),
      data: accepted!.data,
      projectId,
      correlationId: during,
      causationId: during,
      streamVersion: 1,
    });
    await live.query(
      `insert into projection_processed (projection, event_id) values ('request-log', $1) on conflict do nothing`,
      [event.id],
    );
    await requestLogProjection.apply(live.manager, event);

    const indexNames = async () =>
      (
        (await db.query(
          `select indexname from pg_indexes where schemaname = current_schema() and tablename = 'request_log' order by 1`,
        )) as { indexname: string }[]
      ).map((i) => i.indexname);
    const indexesBefore = await indexNames();
    expect(indexesBefore).toHaveLength(3);
    const rebuilt = rebuildProjection(db, requestLogProjection, 'events');
    try {
      await eventually(async () => {
        const waiting: unknown[] = await db.query(
          `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like 'lock table request_log in exclusive mode%'`,
        );
        expect(waiting).toHaveLength(1);
      });
      // Waiting for the lock: the new table is complete, the pruned row is not in it, and nothing
      // that grows with the rebuilt events is left to do under the lock.
      const ids: { request_id: string }[] = await db.query(
        `select request_id from request_log_rebuild where request_id = any($1::uuid[])`,
        [[recent, old, during]],
      );
      expect(ids.map((r) => r.request_id).sort()).toEqual([recent, during].sort());
      expect(await db.query(`select 1 from projection_rebuild_applied where projection = 'request-log'`)).toHaveLength(
        0,
      );
    } finally {
      await live.commitTransaction();
      await live.release();
    }
    await rebuilt;
    const rows: { request_id: string; version: number }[] = await db.query(
      `select request_id, version from request_log where request_id = any($1::uuid[])`,
      [[recent, old, during]],
    );
    expect(Object.fromEntries(rows.map((r) => [r.request_id, r.version]))).toEqual({ [recent]: 1, [during]: 1 });
    // The swapped-in table's indexes have the live one's names (on a fresh database, the migrations').
    expect(await indexNames()).toEqual(indexesBefore);
  });
});
