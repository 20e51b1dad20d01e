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
/** How long new topics may take to have a leader for every partition. */
const READY_MS = 60_000;

const admin = kafka.admin();
await admin.connect();
try {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((t) => !existing.has(t.topic));
  // Leaders are waited for below, not by kafkajs: on a cluster of three brokers just formed, the
  // broker it asks may not know a topic created a moment ago yet, and its wait gives up on that
  // answer (UNKNOWN_TOPIC_OR_PARTITION) instead of asking again.
  if (missing.length > 0) await admin.createTopics({ topics: missing, waitForLeaders: false });
  await leadersOf(topics.map((t) => t.topic));
  process.stdout.write(`[stack] kafka topics ready: ${topics.map((t) => t.topic).join(', ')}\n`);
} finally {
  await admin.disconnect();
}

/** Resolves once every partition of `names` has a leader; throws after READY_MS with the last answer. */
async function leadersOf(names) {
  const until = Date.now() + READY_MS;
  for (;;) {
    let why;
    try {
      const { topics: found } = await admin.fetchTopicMetadata({ topics: names });
      const leaderless = found.flatMap((t) =>
        t.partitions.filter((p) => p.leader < 0).map((p) => `${t.name}/${p.partitionId}`),
      );
      if (found.length === names.length && leaderless.length === 0) return;
      why = `partitions without a leader: ${leaderless.join(', ') || 'topics missing'}`;
    } catch (e) {
      why = e instanceof Error ? e.message : String(e);
    }
    if (Date.now() > until) throw new Error(`the topics have no leaders after ${READY_MS / 1000} s (${why})`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
