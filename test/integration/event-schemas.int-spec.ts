import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { Ajv } from 'ajv';
import { EVENT_TYPES, TOPICS, type SessionView, type StopRecord } from '#libs/contracts';
import { EventStore, RequestStream, SessionStream } from '#libs/events';
import { MeteringService } from '#libs/metering';
import { testConfig } from '../support/config.js';
import { Fixtures } from '../support/fixtures.js';

const config = testConfig();
const DIR = new URL('../../docs/events/domain/', import.meta.url);
const SURCHARGES = { chat: 0, research: 2, documents: 0, code: 2, data: 1, files: 0 } as const;

/** Every domain event type has a JSON Schema and an example in docs/events/domain, and the events
 * the service really appends (as the relay publishes them) match their schema. */
describe('domain event schemas', () => {
  let fixtures: Fixtures;
  const ajv = new Ajv({ allErrors: true, validateSchema: false, validateFormats: false });
  const schemas = new Map<string, object>();
  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    for (const file of (await readdir(DIR)).filter((f) => f.endsWith('.schema.json'))) {
      schemas.set(file.replace('.schema.json', ''), JSON.parse(await readFile(new URL(file, DIR), 'utf8')) as object);
    }
  });
  afterAll(async () => {
    await fixtures.close();
  });

  const validate = (event: { type: string }): string[] => {
    const schema = schemas.get(event.type);
    if (!schema) return [`no schema for ${event.type}`];
    const check = ajv.compile(schema);
    const type = event.type;
    return check(event as unknown) ? [] : (check.errors ?? []).map((e) => `${type} ${e.instancePath} ${e.message}`);
  };

  it('has a schema and a valid example for every event type, and nothing else', async () => {
    expect([...schemas.keys()].sort()).toEqual(Object.values(EVENT_TYPES).sort());
    for (const type of schemas.keys()) {
      const example = JSON.parse(await readFile(new URL(`${type}.example.json`, DIR), 'utf8')) as { type: string };
      expect(validate(example)).toEqual([]);
    }
  });

  it('matches every event type as the service appends and publishes it', async () => {
    const store = new EventStore();
    const sessions = new SessionStream(store);
    const requests = new RequestStream(store, sessions);
    const metering = new MeteringService(fixtures.db, store, requests);
    const { project } = await fixtures.project({ plan: 'starter', credits: 50 });
    await fixtures.accounts.setPlan(project.id, 'pro');
    const stop = (requestId: string, n: number, status: StopRecord['status'], sessionId?: string): StopRecord => ({
      requestId,
      projectId: project.id,
      ...(sessionId ? { sessionId } : {}),
      plan: 'pro',
      stop: n,
      status,
      capabilitiesUsed: ['chat'],
      surcharges: SURCHARGES,
      inputTokens: 10,
      outputTokens: 5,
      ...(status === 'failed' ? { errorCode: 'compute_error' } : {}),
      view: { message: 'secret content', files: [] },
    });
    const admitted = async () => {
      const requestId = randomUUID();
      await metering.admit({ requestId, projectId: project.id, credits: 3, monthlyQuota: 100 });
      return requestId;
    };
    const sessionId = randomUUID();
    const now = Date.now();
    await fixtures.db.transaction((tx) =>
      sessions.create(
        tx,
        { sessionId, projectId: project.id, createdAt: new Date(now), expiresAt: new Date(now + 1_800_000) },
        10,
      ),
    );
    const paused = await admitted();
    await fixtures.db.transaction((tx) =>
      sessions.messageAccepted(tx, { sessionId, projectId: project.id, requestId: paused }),
    );
    await metering.recordStop(stop(paused, 1, 'requires_tool_outputs', sessionId));
    await fixtures.db.transaction((tx) =>
      requests.toolOutputsSubmitted(tx, project.id, { requestId: paused, stop: 1, toolCallIds: ['call_1'] }),
    );
    await metering.recordStop(stop(paused, 2, 'completed', sessionId));
    const view: SessionView = {
      sessionId,
      projectId: project.id,
      status: 'active',
      createdAt: now,
      lastActivityAt: now + 10,
      expiresAt: now + 1_800_010,
      messageCount: 2,
      revision: 1,
      queuedMessages: 0,
    };
    await fixtures.db.transaction((tx) => sessions.recorded(tx, view));
    await fixtures.db.transaction((tx) => sessions.recorded(tx, { ...view, status: 'expired', revision: 2 }));
    const ended = randomUUID();
    await fixtures.db.transaction((tx) =>
      sessions.create(
        tx,
        { sessionId: ended, projectId: project.id, createdAt: new Date(now), expiresAt: new Date(now + 1_800_000) },
        10,
      ),
    );
    await fixtures.db.transaction((tx) =>
      sessions.recorded(tx, { ...view, sessionId: ended, status: 'ended', revision: 1 }),
    );
    const orphan = randomUUID();
    await fixtures.db.transaction((tx) =>
      sessions.create(
        tx,
        { sessionId: orphan, projectId: project.id, createdAt: new Date(now), expiresAt: new Date(now + 1_800_000) },
        10,
      ),
    );
    await fixtures.db.transaction((tx) => sessions.reconciled(tx, orphan, project.id));
    await metering.recordStop(stop(await admitted(), 1, 'failed'));
    await metering.recordStop(stop(await admitted(), 1, 'cancelled'));
    const expiring = await admitted();
    await metering.recordStop(stop(expiring, 1, 'requires_tool_outputs'));
    await metering.recordStop(stop(expiring, 2, 'expired'));
    await metering.release({ requestId: await admitted(), projectId: project.id, reason: 'reconciled' });

    const published: { payload: { type: string; data: unknown } }[] = await fixtures.db.query(
      `select payload from outbox where topic = $1 and payload ->> 'projectid' = $2 order by id`,
      [TOPICS.events, project.id],
    );
    expect([...new Set(published.map((p) => p.payload.type))].sort()).toEqual(Object.values(EVENT_TYPES).sort());
    expect(published.flatMap((p) => validate(p.payload))).toEqual([]);
    // Customer content stays in PostgreSQL: no published domain event carries it.
    expect(JSON.stringify(published)).not.toContain('secret content');
  });
});
