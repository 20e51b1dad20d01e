// The apps' own Kafka client (createKafka, from dist/) against the cluster profile's SASL_SSL
// listeners, with the environment `cluster.sh env-sasl` prints: a message produced and read back
// with the configured user name and password, and the same password with one character changed
// refused by the brokers. scripts/stack/cluster-e2e.sh runs it for each mechanism.
import { randomUUID } from 'node:crypto';
import { loadConfig } from '#libs/config';
import { createKafka } from '#libs/kafka';

const config = loadConfig(process.env);
const mechanism = config.engines.kafka?.sasl?.mechanism;
if (!mechanism) throw new Error('KAFKA_SASL_MECHANISM is not set: run with `cluster.sh env-sasl`');
const say = (s) => process.stderr.write(`[kafka-sasl ${mechanism}] ${s}\n`);

const password = config.engines.kafka.sasl.password;
const wrong = createKafka(
  {
    ...config,
    engines: {
      ...config.engines,
      kafka: {
        ...config.engines.kafka,
        sasl: {
          ...config.engines.kafka.sasl,
          password: `${password.slice(0, -1)}${password.endsWith('x') ? 'y' : 'x'}`,
        },
      },
    },
  },
  'sasl-check-wrong',
);
const refused = await wrong
  .admin()
  .connect()
  .then(
    () => undefined,
    (e) => e,
  );
if (!refused) throw new Error('a wrong password was accepted');
if (!/SASL|[Aa]uthentication/.test(`${refused.name} ${refused.message}`))
  throw new Error(`a wrong password failed otherwise than by authentication: ${refused.message}`);
say(`a wrong password was refused (${refused.name})`);

const kafka = createKafka(config, 'sasl-check');
const topic = `mas-sasl-check-${randomUUID()}`;
const admin = kafka.admin();
await admin.connect();
await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 3 }], waitForLeaders: false });
try {
  // A new topic's leader is known to every broker a moment after it is created.
  for (let i = 0; ; i++) {
    const leader = await admin.fetchTopicMetadata({ topics: [topic] }).then(
      (m) => m.topics[0]?.partitions[0]?.leader ?? -1,
      () => -1,
    );
    if (leader >= 0) break;
    if (i === 100) throw new Error(`${topic} has no leader after 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const value = randomUUID();
  await producer.send({ topic, acks: -1, messages: [{ value }] });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: `${topic}-reader` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const read = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the message was not read back within 30 s')), 30_000);
    void consumer.run({
      eachMessage: async ({ message }) => {
        clearTimeout(timer);
        resolve(message.value?.toString());
      },
    });
  });
  await consumer.disconnect();
  if (read !== value) throw new Error(`read back ${read}, sent ${value}`);
  say('produced and read back a message with acks=all');
} finally {
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await admin.disconnect();
}

process.exit(0);
