// Waits until the local broker answers, then creates the project's topics (auto-creation is off,
// so no consumer ever races it). Run by scripts/stack.sh up; KAFKA_BROKERS comes from stack/env.sh.
// The cluster profile (scripts/stack/cluster.sh) adds its SSL files (KAFKA_SSL_CA_FILE,
// KAFKA_SSL_CERT_FILE, KAFKA_SSL_KEY_FILE), replication 3 and min.insync.replicas 2.
import { readFileSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';

const DAY_MS = 24 * 60 * 60 * 1000;
// Keep in step with TOPICS in libs/contracts/src/topics.ts.
const topics = [
  { topic: 'mas.events.v1', numPartitions: 3, configEntries: [{ name: 'retention.ms', value: '-1' }] },
  { topic: 'mas.usage.v1', numPartitions: 3, configEntries: [{ name: 'retention.ms', value: '-1' }] },
  { topic: 'mas.stream.v1', numPartitions: 3, configEntries: [{ name: 'retention.ms', value: String(DAY_MS) }] },
];

const { KAFKA_SSL_CA_FILE: ca, KAFKA_SSL_CERT_FILE: cert, KAFKA_SSL_KEY_FILE: key } = process.env;
const replication = process.env.MAS_KAFKA_REPLICATION_FACTOR;
const minInsync = process.env.MAS_KAFKA_MIN_INSYNC_REPLICAS;
for (const t of topics) {
  if (replication) t.replicationFactor = Number(replication);
  if (minInsync) t.configEntries.push({ name: 'min.insync.replicas', value: minInsync });
}

const kafka = new Kafka({
  clientId: 'mas-stack',
  brokers: process.env.KAFKA_BROKERS.split(','),
  ...(ca
    ? { ssl: { ca: [readFileSync(ca)], ...(cert && key ? { cert: readFileSync(cert), key: readFileSync(key) } : {}) } }
    : {}),
  logLevel: logLevel.NOTHING,
  retry: { retries: 30, initialRetryTime: 300, maxRetryTime: 2000 },
});
const admin = kafka.admin();
await admin.connect();
try {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((t) => !existing.has(t.topic));
  if (missing.length > 0) {
    await admin.createTopics({ topics: missing, waitForLeaders: true });
  }
  process.stdout.write(`[stack] kafka topics ready: ${topics.map((t) => t.topic).join(', ')}\n`);
} finally {
  await admin.disconnect();
}
