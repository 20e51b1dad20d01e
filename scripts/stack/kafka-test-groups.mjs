// Moves the tests' consumer groups (`$KAFKA_GROUP_PREFIX-*`, idle between runs) to the end of every
// topic they read, before a run: the shared topics keep every event forever (retention -1), and a
// group of the tests that resumed from where the last run left it would first read what the
// drills, the benchmark and `npm start` wrote since, none of it the tests' (350,000 events on a
// machine with a few weeks of drills: the console e2e's cases timed out waiting for its projector
// to show their requests). Run by scripts/test.sh, with the apps' own Kafka client (createKafka,
// from dist/).
import { loadConfig } from '#libs/config';
import { createKafka } from '#libs/kafka';

const config = loadConfig(process.env);
const prefix = `${config.kafkaGroupPrefix}-`;
const admin = createKafka(config, 'test-groups').admin();
await admin.connect();
try {
  const { groups } = await admin.listGroups();
  const moves = [];
  for (const { groupId } of groups.filter((g) => g.groupId.startsWith(prefix)))
    for (const { topic } of await admin.fetchOffsets({ groupId })) moves.push({ groupId, topic });
  // All at once: kafkajs's setOffsets joins the group for it, about 5 s each.
  const failed = await Promise.all(
    moves.map(async ({ groupId, topic }) => {
      try {
        // The ends as offsets, not resetOffsets' "latest" (-1): a consumer takes a committed -1 for
        // no offset at all and starts where `fromBeginning` says, which for the projector is 0.
        const ends = await admin.fetchTopicOffsets(topic);
        await admin.setOffsets({
          groupId,
          topic,
          partitions: ends.map(({ partition, high }) => ({ partition, offset: high })),
        });
        return 0;
      } catch (e) {
        // A member still in the group (a test process killed less than a session timeout ago):
        // that group resumes where it was, as it did before this script.
        process.stderr.write(`[test-groups] ${groupId} on ${topic} left as it is: ${e.message}\n`);
        return 1;
      }
    }),
  );
  const left = failed.reduce((a, b) => a + b, 0);
  process.stdout.write(
    `[test-groups] ${moves.length - left} of ${moves.length} group topic(s) of ${prefix}* moved to the topics' ends\n`,
  );
} finally {
  await admin.disconnect();
}
