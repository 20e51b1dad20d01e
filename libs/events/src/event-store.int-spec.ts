import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { EVENT_TYPES, TOPICS } from '#libs/contracts';
import { createKafka } from '#libs/kafka';
import { dataSourceOptions, PgListener } from '#libs/persistence';
import { collect } from '../../../test/support/kafka.js';
import { testConfig } from '../../../test/support/config.js';
import { deterministicUuid } from './deterministic-id.js';
import { ConcurrencyError, EventStore, type NewEvent } from './event-store.js';
import { OutboxRelay } from './outbox-relay.js';

const config = testConfig();

const event = (projectId: string, n: number): NewEvent => ({
  eventId: randomUUID(),
  type: EVENT_TYPES.projectCreditsAdded,
  data: { n },
  metadata: { projectId, correlationId: projectId, causationId: projectId },
});

describe('event store and outbox', () => {
  let db: DataSource;
  const store = new EventStore();
  /** The test process's listener, which its relays share as a relay process's would. */
  const listener = new PgListener(config.databaseUrl);
  beforeAll(async () => {
    db = new DataSource({ ...dataSourceOptions(config), logging: false });
    await db.initialize();
  });
  afterAll(async () => {
    await listener.stop();
    await db.destroy();
  });

  it('lets one of two concurrent appends at the same version win; the other gets a ConcurrencyError', async () => {
    const projectId = randomUUID();
    const stream = `project-${projectId}`;
    await db.transaction((tx) => store.append(tx, stream, 0, [event(projectId, 1)]));
    const results = await Promise.allSettled([
      db.transaction((tx) => store.append(tx, stream, 1, [event(projectId, 2)])),
      db.transaction((tx) => store.append(tx, stream, 1, [event(projectId, 3)])),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(rejected?.reason).toBeInstanceOf(ConcurrencyError);
    const events = await store.readStream(db.manager, stream);
    expect(events.map((e) => e.version)).toEqual([1, 2]);
  });

  it('appends an event with a known id once, however often the step runs', async () => {
    const projectId = randomUUID();
    const id = deterministicUuid(projectId, 'step');
    const twice = { ...event(projectId, 1), eventId: id };
    await db.transaction((tx) => store.append(tx, `project-${projectId}`, 'any', [twice]));
    await db.transaction((tx) => store.append(tx, `project-${projectId}`, 'any', [twice]));
    expect(await store.readStream(db.manager, `project-${projectId}`)).toHaveLength(1);
    const outbox: unknown[] = await db.query(`select 1 from outbox where event_id = $1`, [id]);
    expect(outbox).toHaveLength(1);
  });

  it('queues each event of a group as the CloudEvent of the stored event: its version, time and data, in version order', async () => {
    const projectId = randomUUID();
    const stream = `project-${projectId}`;
    await db.transaction((tx) => store.append(tx, stream, 0, [event(projectId, 1)]));
    const group = [event(projectId, 2), event(projectId, 3), event(projectId, 4)];
    const appended = await db.transaction((tx) => store.append(tx, stream, 'any', group));
    const stored = await store.readStream(db.manager, stream);
    expect(appended).toEqual(stored.slice(1));
    expect(stored.map((e) => [e.version, e.data])).toEqual([
      [1, { n: 1 }],
      [2, { n: 2 }],
      [3, { n: 3 }],
      [4, { n: 4 }],
    ]);
    const queued: { payload: Record<string, unknown> }[] = await db.query(
      `select payload from outbox where key = $1 and topic = $2 order by id`,
      [stream, TOPICS.events],
    );
    expect(queued.map((r) => r.payload)).toEqual(
      stored.map((e) =>
        expect.objectContaining({
          id: e.eventId,
          subject: stream,
          type: e.type,
          streamversion: e.version,
          time: e.recordedAt,
          data: e.data,
          projectid: projectId,
        }),
      ),
    );
    // A stream that moved since it was read refuses a group at the old version, and queues nothing.
    await expect(db.transaction((tx) => store.append(tx, stream, 2, [event(projectId, 5)]))).rejects.toBeInstanceOf(
      ConcurrencyError,
    );
    expect(await db.query(`select 1 from outbox where key = $1`, [stream])).toHaveLength(4);
  });

  it('keeps events in the outbox while Kafka cannot be reached, and delivers each once when it can', async () => {
    const projectId = randomUUID();
    // A relay whose broker address answers nothing: Kafka is down as far as it can tell.
    const down = new OutboxRelay(db, createKafka({ kafkaBrokers: ['127.0.0.1:1'] }, 'relay-down'), listener);
    for (let n = 1; n <= 5; n++)
      await db.transaction((tx) => store.append(tx, `project-${projectId}`, 'any', [event(projectId, n)]));
    await down.start();
    await new Promise((r) => setTimeout(r, 1500));
    await down.stop();
    const waiting: { n: string }[] = await db.query(
      `select count(*) as n from outbox where key = $1 and published_at is null`,
      [`project-${projectId}`],
    );
    expect(Number(waiting[0]?.n)).toBe(5);

    const kafka = createKafka(config, 'relay-test');
    const reader = await collect(kafka, TOPICS.events);
    const up = new OutboxRelay(db, kafka, listener);
    await up.start();
    try {
      const mine = (m: Record<string, unknown>[]) => m.filter((x) => x.projectid === projectId);
      await reader.waitFor((m) => mine(m).length >= 5);
      await new Promise((r) => setTimeout(r, 1000)); // anything duplicated would arrive by now
      const delivered = mine(reader.messages);
      expect(delivered.map((m) => (m.data as { n: number }).n)).toEqual([1, 2, 3, 4, 5]);
      expect(delivered[0]).toMatchObject({
        specversion: '1.0',
        type: EVENT_TYPES.projectCreditsAdded,
        source: '/managed-agent-service',
        subject: `project-${projectId}`,
        _key: `project-${projectId}`,
      });
    } finally {
      await up.stop();
      await reader.stop();
    }
  });

  it("keeps each stream's order on Kafka with two relays publishing the same outbox (issue 28, 31)", async () => {
    // A backlog (as after a Kafka outage) of three streams, larger than several batches, then two
    // relays started at once: each batch must go out after the one before it, whichever relay has it.
    const streams = Array.from({ length: 3 }, () => randomUUID());
    const perStream = 600;
    for (let from = 1; from <= perStream; from += 100) {
      for (const projectId of streams) {
        await db.transaction((tx) =>
          store.append(
            tx,
            `project-${projectId}`,
            'any',
            Array.from({ length: 100 }, (_, i) => event(projectId, from + i)),
          ),
        );
      }
    }
    const kafka = createKafka(config, 'relay-order-test');
    const reader = await collect(kafka, TOPICS.events);
    // The first relay reaches Kafka over a slow network (its sends arrive 300 ms late); the second
    // starts once the first is sending its first batch.
    let sending!: () => void;
    const firstSend = new Promise<void>((resolve) => (sending = resolve));
    const slow = Object.assign(Object.create(kafka) as typeof kafka, {
      producer: (options: Parameters<typeof kafka.producer>[0]) => {
        const producer = kafka.producer(options);
        const sendBatch = producer.sendBatch.bind(producer);
        producer.sendBatch = async (batch) => {
          sending();
          await new Promise((r) => setTimeout(r, 300));
          return sendBatch(batch);
        };
        return producer;
      },
    });
    const relays = [new OutboxRelay(db, slow, listener), new OutboxRelay(db, kafka, listener)];
    await relays[0]!.start();
    await firstSend;
    await relays[1]!.start();
    try {
      const mine = (projectId: string) =>
        reader.messages.filter((x) => x.projectid === projectId).map((m) => (m.data as { n: number }).n);
      await reader.waitFor(() => streams.every((p) => mine(p).length >= perStream), 60_000);
      for (const projectId of streams)
        expect(mine(projectId)).toEqual(Array.from({ length: perStream }, (_, i) => i + 1));
    } finally {
      await Promise.all(relays.map((r) => r.stop()));
      await reader.stop();
    }
  }, 90_000);
});
