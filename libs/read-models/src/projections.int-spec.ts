import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { EVENT_TYPES, TOPICS, USAGE_EVENT_TYPE, type UsageEventData } from '#libs/contracts';
import { toCloudEvent, type CloudEvent } from '#libs/events';
import { createKafka } from '#libs/kafka';
import { dataSourceOptions } from '#libs/persistence';
import { testConfig } from '../../../test/support/config.js';
import { ProjectionRunner } from './projection-runner.js';
import { requestLogProjection } from './projections/request-log.projection.js';
import { sessionsProjection } from './projections/sessions.projection.js';
import { usageProjection } from './projections/usage.projection.js';

const config = testConfig();

function usageEvent(
  projectId: string,
  requestId: string,
  kind: UsageEventData['kind'],
  credits: number,
): CloudEvent<Record<string, unknown>> {
  const data: UsageEventData = {
    project_id: projectId,
    request_id: requestId,
    session_id: null,
    kind,
    status: 'completed',
    credits,
    input_tokens: 10,
    output_tokens: 5,
    capabilities: ['chat', 'code'],
    plan: 'pro',
    billing_period_start: '2026-11-01T00:00:00.000Z',
    occurred_at: new Date().toISOString(),
  };
  return toCloudEvent({
    id: randomUUID(),
    type: USAGE_EVENT_TYPE,
    subject: `agent-request-${requestId}`,
    time: new Date(),
    data: { ...data },
    projectId,
    correlationId: requestId,
    causationId: requestId,
  });
}

describe('projections', () => {
  let db: DataSource;
  let runner: ProjectionRunner;
  beforeAll(async () => {
    db = new DataSource({ ...dataSourceOptions(config), logging: false });
    await db.initialize();
    runner = new ProjectionRunner(db, createKafka(config, 'projection-test'), [
      usageProjection,
      requestLogProjection,
      sessionsProjection,
    ]);
  });
  afterAll(async () => {
    await runner.stop();
    await db.destroy();
  });

  const usageOf = async (projectId: string) => ({
    totals: await db.query(
      `select requests, credits, input_tokens::int, output_tokens::int from usage_totals where project_id = $1`,
      [projectId],
    ),
    byCapability: await db.query(
      `select capability, requests from usage_by_capability where project_id = $1 order by capability`,
      [projectId],
    ),
  });

  it('usage: the same event delivered twice changes nothing', async () => {
    const projectId = randomUUID();
    const first = usageEvent(projectId, randomUUID(), 'initial', 3);
    expect(await runner.handle(usageProjection, first)).toBe(true);
    const once = await usageOf(projectId);
    expect(await runner.handle(usageProjection, first)).toBe(false);
    expect(await usageOf(projectId)).toEqual(once);
    expect(once).toEqual({
      totals: [{ requests: 1, credits: 3, input_tokens: 10, output_tokens: 5 }],
      byCapability: [
        { capability: 'chat', requests: 1 },
        { capability: 'code', requests: 1 },
      ],
    });
    await runner.handle(usageProjection, usageEvent(projectId, randomUUID(), 'continuation', 0));
    expect((await usageOf(projectId)).totals).toEqual([
      { requests: 1, credits: 3, input_tokens: 20, output_tokens: 10 },
    ]);
  });

  it('request log: the same event delivered twice changes nothing', async () => {
    const projectId = randomUUID();
    const requestId = randomUUID();
    const completed = toCloudEvent({
      id: randomUUID(),
      type: EVENT_TYPES.agentRequestCompleted,
      subject: `agent-request-${requestId}`,
      time: new Date(),
      data: {
        requestId,
        status: 'completed',
        stop: 1,
        capabilitiesUsed: ['chat'],
        creditsCharged: 1,
        inputTokens: 4,
        outputTokens: 2,
      },
      projectId,
      correlationId: requestId,
      causationId: requestId,
      streamVersion: 1,
    });
    await runner.handle(requestLogProjection, completed);
    await runner.handle(requestLogProjection, completed);
    const rows = await db.query(`select status, credits, tokens::int, version from request_log where request_id = $1`, [
      requestId,
    ]);
    expect(rows).toEqual([{ status: 'completed', credits: 1, tokens: 6, version: 1 }]);
  });

  it('sessions: the same event delivered twice changes nothing', async () => {
    const projectId = randomUUID();
    const sessionId = randomUUID();
    const at = (version: number, type: string, data: Record<string, unknown>) =>
      toCloudEvent({
        id: randomUUID(),
        type,
        subject: `session-${sessionId}`,
        time: new Date(),
        data,
        projectId,
        correlationId: sessionId,
        causationId: sessionId,
        streamVersion: version,
      });
    const created = at(1, EVENT_TYPES.sessionCreated, {
      sessionId,
      createdAt: '2026-11-01T10:00:00.000Z',
      expiresAt: '2026-11-01T10:30:00.000Z',
    });
    const answered = at(2, EVENT_TYPES.sessionMessageAnswered, {
      sessionId,
      status: 'active',
      createdAt: '2026-11-01T10:00:00.000Z',
      lastActivityAt: '2026-11-01T10:05:00.000Z',
      expiresAt: '2026-11-01T10:35:00.000Z',
      messageCount: 2,
      revision: 1,
    });
    for (const event of [created, created, answered, answered, created]) await runner.handle(sessionsProjection, event);
    const rows = await db.query(
      `select status, message_count, last_activity_at, expires_at, version from sessions where id = $1`,
      [sessionId],
    );
    expect(rows).toEqual([
      {
        status: 'active',
        message_count: 2,
        last_activity_at: new Date('2026-11-01T10:05:00.000Z'),
        expires_at: new Date('2026-11-01T10:35:00.000Z'),
        version: 2,
      },
    ]);
  });

  it('passes over the events of streams a projection does not read, without a transaction or a processed row', async () => {
    const projectId = randomUUID();
    const requestId = randomUUID();
    const charged = toCloudEvent({
      id: randomUUID(),
      type: EVENT_TYPES.projectCreditsCharged,
      subject: `project-${projectId}`,
      time: new Date(),
      data: { requestId, reserved: 3, charged: 1, balance: 9 },
      projectId,
      correlationId: requestId,
      causationId: requestId,
      streamVersion: 4,
    });
    const accepted = toCloudEvent({
      id: randomUUID(),
      type: EVENT_TYPES.agentRequestAccepted,
      subject: `agent-request-${requestId}`,
      time: new Date(),
      data: { requestId, creditsReserved: 3, requestsUsed: 1, creditsRemaining: 7 },
      projectId,
      correlationId: requestId,
      causationId: requestId,
      streamVersion: 1,
    });
    const processed = async (eventId: string): Promise<string[]> =>
      (
        (await db.query(`select projection from projection_processed where event_id = $1 order by projection`, [
          eventId,
        ])) as { projection: string }[]
      ).map((r) => r.projection);
    for (const projection of [requestLogProjection, sessionsProjection]) {
      expect(await runner.apply(projection, [charged])).toBe(0);
      expect(await runner.apply(projection, [accepted, charged])).toBe(projection === requestLogProjection ? 1 : 0);
    }
    expect(await processed(charged.id)).toEqual([]);
    expect(await processed(accepted.id)).toEqual(['request-log']);
    expect(await db.query(`select status from request_log where request_id = $1`, [requestId])).toEqual([
      { status: 'in_progress' },
    ]);
  });

  it('skips a message that is not a CloudEvent instead of stalling on it', async () => {
    const projectId = randomUUID();
    const kafka = createKafka(config, 'projection-poison-test');
    const topic = `usage-poison-${randomUUID()}`;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    const producer = kafka.producer();
    await producer.connect();
    const good = usageEvent(projectId, randomUUID(), 'initial', 2);
    await producer.send({
      topic,
      acks: -1,
      messages: ['not json', '{}', JSON.stringify({ id: 42, type: 'x' }), JSON.stringify(good)].map((value) => ({
        key: projectId,
        value,
      })),
    });
    await producer.disconnect();
    const runner = new ProjectionRunner(db, kafka, [{ ...usageProjection, topic: topic as typeof TOPICS.usage }]);
    await runner.start(`-poison-${randomUUID()}`);
    try {
      const deadline = Date.now() + 60_000;
      while ((await usageOf(projectId)).totals.length === 0) {
        if (Date.now() > deadline) throw new Error('the event after the malformed ones was never projected');
        await new Promise((r) => setTimeout(r, 100));
      }
      expect((await usageOf(projectId)).totals).toEqual([
        { requests: 1, credits: 2, input_tokens: 10, output_tokens: 5 },
      ]);
    } finally {
      await runner.stop();
      await admin.deleteTopics({ topics: [topic] });
      await admin.disconnect();
    }
  });
});
