import { randomUUID } from 'node:crypto';
import type { Consumer, Kafka } from 'kafkajs';

/** Collects the JSON messages of a topic from offset 0, with a fresh consumer group. */
export async function collect(kafka: Kafka, topic: string): Promise<{ messages: Record<string, unknown>[]; waitFor(pred: (m: Record<string, unknown>[]) => boolean, timeoutMs?: number): Promise<Record<string, unknown>[]>; stop(): Promise<void> }> {
  const consumer: Consumer = kafka.consumer({ groupId: `test-${randomUUID()}` });
  const messages: Record<string, unknown>[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      if (message.value) messages.push({ ...(JSON.parse(message.value.toString('utf8')) as Record<string, unknown>), _key: message.key?.toString() });
    },
  });
  return {
    messages,
    waitFor: async (pred, timeoutMs = 20_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!pred(messages)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for messages on ${topic} (have ${messages.length})`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return messages;
    },
    stop: () => consumer.disconnect(),
  };
}
