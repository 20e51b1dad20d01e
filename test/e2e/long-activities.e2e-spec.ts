import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Client, Connection } from '@temporalio/client';
import { agentRequestWorkflowId } from '#libs/contracts';
import { createKafka } from '#libs/kafka';
import { startAppProcess, type AppProcess } from '../support/app-process.js';
import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { request } from '../support/http.js';
import { connectTemporal } from '../support/temporal.js';

// The bulkhead (docs/operations.md, "Long activities on a worker of their own"): with
// TEMPORAL_LONG_ACTIVITY_TASK_QUEUE set, the api names that queue in every run it starts, and a
// run's built-in tools and its streamed or background model calls run there, on a worker process
// of their own (`worker-long`, as `npm start` and the drill start it: nice 10, no workflows). The
// workflows' worker of the file runs in the Jest process; the long-activity worker is the real
// process, started the way the launchers start it.
const longQueue = `e2e-long-activities-long-${randomUUID()}`;
/** The long-activity worker's own consumer-group prefix: any group it joined would be under it. */
const longGroupPrefix = `e2e-long-activities-${randomUUID()}`;

describe('long activities on a worker of their own', () => {
  const stack = e2eStack({ name: 'long-activities', env: { TEMPORAL_LONG_ACTIVITY_TASK_QUEUE: longQueue } });
  let long: AppProcess;
  let temporal: { client: Client; connection: Connection };

  beforeAll(async () => {
    long = startAppProcess('worker-long', {
      ...stack.env,
      TEMPORAL_WORKER_VERSIONING: 'false',
      KAFKA_GROUP_PREFIX: longGroupPrefix,
    });
    await long.started(/polling task queue .*long activities only/);
    temporal = await connectTemporal(stack.config);
  }, 120_000);
  afterAll(async () => {
    await temporal?.connection.close();
    await long?.stop();
  }, 60_000);

  /** The task queue each activity of the request's workflow was scheduled on, by activity type. */
  async function scheduledOn(requestId: string): Promise<Record<string, string[]>> {
    const { events } = await temporal.client.workflow.getHandle(agentRequestWorkflowId(requestId)).fetchHistory();
    const queues: Record<string, string[]> = {};
    for (const e of events ?? []) {
      const a = e.activityTaskScheduledEventAttributes;
      if (a?.activityType?.name) (queues[a.activityType.name] ??= []).push(a.taskQueue?.name ?? '');
    }
    return queues;
  }

  it('runs at a lower CPU priority than the rest, without workflows', () => {
    // /proc/<pid>/stat: the 19th field is the nice value (after the command, which is in parentheses).
    const stat = readFileSync(`/proc/${long.process.pid}/stat`, 'utf8');
    const nice = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    expect(nice).toBe(10);
  });

  it('runs a built-in tool of a one-shot request on the long-activity worker', async () => {
    const { auth } = await stack.fixtures.project({ credits: 20 });
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'run_javascript {"code":"6*7"}', capabilities: ['code'] },
    });
    expect(res.status).toBe(200);
    expect(res.body.message).toContain('42');
    expect(res.body.capabilities_used).toEqual(['chat', 'code']);
    expect(await scheduledOn(res.body.id)).toEqual({ runBuiltinTool: [longQueue] });
  });

  it("runs a background run's model call on the long-activity worker", async () => {
    const { auth } = await stack.fixtures.project({ credits: 20 });
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'hello', background: true },
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('in_progress');
    const id = res.body.id as string;
    await eventually(async () => {
      const got = await request(stack.api.url, 'GET', `/v1/agent/${id}`, { headers: auth });
      expect(got.body.status).toBe('completed');
    }, 60_000);
    expect(await scheduledOn(id)).toEqual({ callModel: [longQueue] });
  });

  // Last, so that the worker has been up for the whole file: a consumer joins its group within
  // seconds of the start (a workflows' worker's webhook dispatcher does).
  it('runs no background loop: it is in no consumer group, so its restarts rebalance none', async () => {
    const admin = createKafka(stack.config, 'e2e-long-activities-admin').admin();
    await admin.connect();
    try {
      const { groups } = await admin.describeGroups([`${longGroupPrefix}-webhooks`]);
      expect(groups.map((g) => g.members.length)).toEqual([0]);
    } finally {
      await admin.disconnect();
    }
  });
});
