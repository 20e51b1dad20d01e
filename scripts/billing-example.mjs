// A billing consumer, the way a billing team would start: reads mas.usage.v1 from the beginning
// with a throwaway consumer group, deduplicates on the CloudEvents id (delivery is at least once),
// and prints credits, requests and tokens per project and billing period. Stops after the topic
// has been quiet for IDLE_MS. Usage: KAFKA_BROKERS=127.0.0.1:19092 node scripts/billing-example.mjs
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';

const IDLE_MS = Number(process.env.IDLE_MS ?? 3000);
const brokers = (process.env.KAFKA_BROKERS ?? '127.0.0.1:19092').split(',');
const kafka = new Kafka({ clientId: 'billing-example', brokers, logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({ groupId: `billing-example-${randomUUID()}` });

const seen = new Set();
const bills = new Map();
let last = Date.now();

await consumer.connect();
await consumer.subscribe({ topic: 'mas.usage.v1', fromBeginning: true });
await consumer.run({
  eachMessage: async ({ message }) => {
    last = Date.now();
    const event = JSON.parse(message.value.toString('utf8'));
    if (event.type !== 'mas.usage.recorded.v1' || seen.has(event.id)) return;
    seen.add(event.id);
    const u = event.data;
    const key = `${u.project_id}  ${u.billing_period_start.slice(0, 10)}`;
    const bill = bills.get(key) ?? { requests: 0, credits: 0, tokens: 0 };
    bill.requests += u.kind === 'initial' ? 1 : 0;
    bill.credits += u.credits;
    bill.tokens += u.input_tokens + u.output_tokens;
    bills.set(key, bill);
  },
});
while (Date.now() - last < IDLE_MS) await new Promise((r) => setTimeout(r, 200));
await consumer.disconnect();

process.stdout.write(`${'project'.padEnd(36)}  period      requests  credits  tokens\n`);
for (const [key, b] of [...bills].sort()) {
  process.stdout.write(
    `${key}  ${String(b.requests).padStart(8)}  ${String(b.credits).padStart(7)}  ${String(b.tokens).padStart(6)}\n`,
  );
}
process.stdout.write(`${seen.size} usage events\n`);
