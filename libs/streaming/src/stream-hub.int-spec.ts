import { randomUUID } from 'node:crypto';
import { Kafka } from 'kafkajs';
import { testConfig } from '../../../test/support/config.js';
import { eventually } from '../../../test/support/eventually.js';
import { TOPICS, type StreamEvent } from '#libs/contracts';
import { StreamHub } from './stream-hub.js';
import type { StreamBatch } from './stream-publisher.js';

const config = testConfig();

/** The api's live fan-out over the real Kafka: a replica's group of its own, from the latest offset. */
describe('StreamHub', () => {
  const kafka = new Kafka({ clientId: 'stream-hub-spec', brokers: [...config.kafkaBrokers] });
  const producer = kafka.producer();
  const hub = new StreamHub(kafka);

  beforeAll(async () => {
    await producer.connect();
    await hub.start();
  });

  afterAll(async () => {
    await hub.stop();
    await producer.disconnect();
  });

  const send = (requestId: string, text: string) =>
    producer.send({
      topic: TOPICS.stream,
      messages: [
        {
          key: requestId,
          value: JSON.stringify({
            requestId,
            events: [{ seq: 1, type: 'token', data: { text } } satisfies StreamEvent],
          } satisfies StreamBatch),
        },
      ],
    });

  it("hands each batch to its request's listeners only, and commits no offset (nothing would read it)", async () => {
    const [mine, other] = [randomUUID(), randomUUID()];
    const got: string[] = [];
    const off = hub.subscribe(mine, (events) => got.push(...events.map((e) => JSON.stringify(e.data))));
    await send(other, 'not mine');
    await send(mine, 'mine');
    await eventually(async () => expect(got).toEqual([JSON.stringify({ text: 'mine' })]));
    off();

    // A consumer that commits does so by the time it stops at the latest.
    await hub.stop();
    const admin = kafka.admin();
    await admin.connect();
    try {
      const [topic] = await admin.fetchOffsets({ groupId: hub.groupId, topics: [TOPICS.stream] });
      expect(topic!.partitions.length).toBeGreaterThan(0);
      expect(topic!.partitions.filter((p) => p.offset !== '-1')).toEqual([]);
    } finally {
      await admin.disconnect();
    }
  });
});
