// Watches the usage pipeline from outside: a consumer of mas.usage.v1 in its own consumer group
// (from the latest offset, so only this run's events), and a poller of the usage projection's
// per-request row (request_log). Both only record when they first saw a request id; the
// benchmark compares that with when the api's response arrived.
import { Kafka, logLevel } from 'kafkajs';
import { TOPICS } from '#libs/contracts';
// The apps' kafkajs fix (libs/kafka/src/request-queue-timeout.ts, loaded with the library): an
// idle kafkajs client otherwise checks its request queue 1000 times a second, and this watcher
// used 40 ms of CPU a second in the harness, on the same two cores as the measured requests.
import '#libs/kafka';
import { now } from './http.mjs';

/** The request id a usage message is about, whatever the envelope (CloudEvents `data` or flat). */
function requestIdOf(value) {
  let json;
  try {
    json = JSON.parse(value);
  } catch {
    return undefined;
  }
  const candidates = [json?.data?.request_id, json?.request_id, json?.data?.requestId, json?.requestId];
  return candidates.find((c) => typeof c === 'string');
}

/** Starts the consumer; resolves once it has joined its group (bounded), or with `error`. */
export async function watchUsageTopic({ brokers, groupId, joinTimeoutMs = 20_000 }) {
  const seen = new Map();
  let messages = 0;
  const kafka = new Kafka({ clientId: 'mas-bench', brokers, logLevel: logLevel.NOTHING, connectionTimeout: 3000 });
  // A broker answers a fetch as soon as a message arrives, so a long wait costs no lag, and the
  // watcher adds as little broker work as it can (no offset commits: the group is thrown away).
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10_000, heartbeatInterval: 3000, maxWaitTimeInMs: 1000 });
  const admin = kafka.admin();
  const result = {
    seen,
    get messages() {
      return messages;
    },
    error: undefined,
    /** Members of the projector's consumer groups: more than one means another projector (a
     * test run's, say) shares a group and takes part of the events to its own database. */
    async projectorGroups() {
      try {
        await admin.connect();
        const { groups } = await admin.listGroups();
        const names = groups
          .map((g) => g.groupId)
          .filter((g) => /^mas-projector-[a-z-]+$/.test(g) && !/-(test|rebuild)-/.test(g));
        const described = names.length ? await admin.describeGroups(names) : { groups: [] };
        return Object.fromEntries(described.groups.map((g) => [g.groupId, g.members.length]));
      } catch {
        return undefined;
      }
    },
    async close() {
      await consumer.disconnect().catch(() => undefined);
      // The group only served this run.
      await admin
        .connect()
        .then(() => admin.deleteGroups([groupId]))
        .catch(() => undefined);
      await admin.disconnect().catch(() => undefined);
    },
  };
  try {
    const joined = new Promise((resolve) => consumer.on(consumer.events.GROUP_JOIN, resolve));
    await consumer.connect();
    await consumer.subscribe({ topic: TOPICS.usage, fromBeginning: false });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        const at = now();
        messages++;
        const id = message.value ? requestIdOf(message.value.toString('utf8')) : undefined;
        if (id && !seen.has(id)) seen.set(id, at);
      },
    });
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the consumer did not join group ${groupId} within ${joinTimeoutMs / 1000} s`)),
        joinTimeoutMs,
      );
    });
    await Promise.race([joined, timeout]).finally(() => clearTimeout(timer));
  } catch (e) {
    result.error = e instanceof Error ? e.message : String(e);
  }
  return result;
}

/** Whether the usage projection's per-request table exists yet. */
export async function projectionTable(pg) {
  const { rows } = await pg.query(`select to_regclass('request_log') is not null as present`);
  return rows[0]?.present === true;
}

/** Polls request_log every `everyMs` for the ids it is told to expect, until stopped. */
export function projectionPoller(pg, everyMs = 25) {
  const seen = new Map();
  const waiting = new Set();
  let stopped = false;
  let failure;
  const loop = (async () => {
    while (!stopped) {
      if (waiting.size > 0) {
        try {
          const ids = [...waiting];
          const { rows } = await pg.query(
            `select request_id::text as id from request_log where request_id = any($1::uuid[])`,
            [ids],
          );
          const at = now();
          for (const { id } of rows) {
            seen.set(id, at);
            waiting.delete(id);
          }
        } catch (e) {
          failure = e instanceof Error ? e.message : String(e);
          return;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    seen,
    expect(id) {
      if (!seen.has(id)) waiting.add(id);
    },
    get pending() {
      return waiting.size;
    },
    get failure() {
      return failure;
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
