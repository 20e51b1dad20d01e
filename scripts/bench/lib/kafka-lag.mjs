// How far consumer groups are behind their topics, for the drill and the benchmark: a phase that
// measures latency or idle CPU must not measure it while a projector replays the shared topics,
// which keep every event (retention -1) and hold every earlier run's.
import { setTimeout as sleep } from 'node:timers/promises';
import { AssignerProtocol } from 'kafkajs';

/**
 * Waits until every consumer group that `isOurs(groupId)` picks has read the topics its members
 * are assigned to the end, up to `timeoutMs`; returns the messages still unread then (0: caught
 * up). A group without members counts as read.
 * @param {import('kafkajs').Kafka} kafka
 * @param {(groupId: string) => boolean} isOurs
 */
export async function consumersCaughtUp(kafka, isOurs, { timeoutMs = 180_000 } = {}) {
  const admin = kafka.admin();
  await admin.connect();
  const unread = async () => {
    const ours = (await admin.listGroups()).groups.map((g) => g.groupId).filter(isOurs);
    let lag = 0;
    for (const group of (await admin.describeGroups(ours)).groups) {
      const topics = new Set(
        group.members.flatMap((m) =>
          Object.keys(AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment ?? {}),
        ),
      );
      for (const topic of topics) {
        const [committed] = await admin.fetchOffsets({ groupId: group.groupId, topics: [topic] });
        for (const end of await admin.fetchTopicOffsets(topic)) {
          const at = Number(committed?.partitions.find((p) => p.partition === end.partition)?.offset ?? -1);
          lag += Number(end.high) - (at < 0 ? Number(end.low) : at);
        }
      }
    }
    return lag;
  };
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const lag = await unread();
      if (lag === 0 || Date.now() > deadline) return lag;
      await sleep(1000);
    }
  } finally {
    await admin.disconnect();
  }
}
