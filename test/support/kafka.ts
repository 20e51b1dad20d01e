import { randomUUID } from 'node:crypto';
import type { Consumer, Kafka } from 'kafkajs';

/** Collects the JSON messages published on a topic from now on (from each partition's end offset
 * at the call), with a fresh consumer group. Not from offset 0: the topics are shared by every test
 * run on the machine, and reading them whole grows with its history. */
export async function collect(
  kafka: Kafka,
  topic: string,
): Promise<{
  messages: Record<string, unknown>[];
  waitFor(pred: (m: Record<string, unknown>[]) => boolean, timeoutMs?: number): Promise<Record<string, unknown>[]>;
  stop(): Promise<void>;
}> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic).finally(() => admin.disconnect());
  const consumer: Consumer = kafka.consumer({ groupId: `test-${randomUUID()}` });
  const messages: Record<string, unknown>[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: false });
  await consumer.run({
    eachMessage: async ({ message }) => {
      if (message.value)
        messages.push({
          ...(JSON.parse(message.value.toString('utf8')) as Record<string, unknown>),
          _key: message.key?.toString(),
        });
    },
  });
  // The group starts at the end offsets of when it joins; what was published between the call and
  // the join is read too.
  for (const { partition, offset } of ends) consumer.seek({ topic, partition, offset });
  return {
    messages,
    waitFor: async (pred, timeoutMs = 20_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!pred(messages)) {
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for messages on ${topic} (have ${messages.length})`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return messages;
    },
    stop: () => consumer.disconnect(),
  };
}
