// scripts/stack/kafka-test-groups.mjs over the real Kafka: before a run, the tests' consumer
// groups move to the ends of the topics they read, and no other group moves. Found by the console
// e2e, which failed 1-4 of its cases when run after drills: its projector first read the 350,000
// events the drills had written since the tests' last run.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { createKafka } from '#libs/kafka';
import { testConfig } from '../support/config.js';

const root = resolve(import.meta.dirname, '../..');
const config = testConfig();

describe("the tests' consumer groups, before a run", () => {
  const kafka = createKafka(config, 'test-groups-check');
  const admin = kafka.admin();
  const topic = `test-groups-check-${randomUUID()}`;
  const prefix = `test-groups-${randomUUID()}`;
  const ours = `${prefix}-projector-check`;
  const other = `other-${randomUUID()}`;

  beforeAll(async () => {
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: Array.from({ length: 7 }, (_, i) => ({ key: `k${i}`, value: `${i}` })) });
    await producer.disconnect();
  });

  afterAll(async () => {
    await admin.deleteGroups([ours, other]).catch(() => undefined);
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });

  const committed = async (groupId: string): Promise<number[]> => {
    const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return offsets!.partitions.sort((a, b) => a.partition - b.partition).map((p) => Number(p.offset));
  };

  it("moves the prefix's groups to the topics' ends, as offsets a consumer starts from, and no other group", async () => {
    // kafkajs's setOffsets joins the group for it (about 5 s): both at once.
    await Promise.all(
      [ours, other].map((groupId) =>
        admin.setOffsets({ groupId, topic, partitions: [0, 1].map((partition) => ({ partition, offset: '0' })) }),
      ),
    );

    await promisify(execFile)(process.execPath, ['scripts/stack/kafka-test-groups.mjs'], {
      cwd: root,
      env: { ...process.env, KAFKA_GROUP_PREFIX: prefix, KAFKA_BROKERS: config.kafkaBrokers.join(',') },
    });

    const ends = (await admin.fetchTopicOffsets(topic))
      .sort((a, b) => a.partition - b.partition)
      .map((p) => Number(p.high));
    expect(ends.reduce((a, b) => a + b)).toBe(7);
    // The ends themselves: resetOffsets' "latest" (-1) reads to a consumer as no offset, and the
    // projector, subscribed from the beginning, would then read the whole topic.
    expect(await committed(ours)).toEqual(ends);
    expect(await committed(other)).toEqual([0, 0]);
  });
});
