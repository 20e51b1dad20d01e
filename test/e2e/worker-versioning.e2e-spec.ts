import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Connection } from '@temporalio/client';
import { runCli } from '../../apps/cli/src/cli.js';
import { loadConfig } from '#libs/config';
import { agentRequestWorkflowId, sessionWorkflowId } from '#libs/contracts';
import { clearTaskQueue, describeDeployment } from '#libs/temporal';
import { startApi, type RunningApi } from '../support/api.js';
import { testConfig } from '../support/config.js';
import { Fixtures } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { eventually } from '../support/eventually.js';
import { connectTemporal } from '../support/temporal.js';
import { APP_CLOSE_TIMEOUT_MS, startWorker, type RunningWorker } from '../support/worker.js';

// Worker Versioning (DESIGN section 10) with real workers of two builds on one task queue, the
// real Temporal server, api and PostgreSQL: a deploy while a request is paused and a session has
// history. Which build ran a workflow task is read from the workflow's history, where Temporal
// records the build of the worker that completed each task.
const config = testConfig();
const taskQueue = `e2e-versioning-${randomUUID()}`;
const env = { TEMPORAL_TASK_QUEUE: taskQueue };
const BUILD_A = `0.0.0+test-a.${randomUUID().slice(0, 8)}`;
const BUILD_B = `0.0.0+test-b.${randomUUID().slice(0, 8)}`;
const versioned = (buildId: string) => ({ ...env, TEMPORAL_WORKER_VERSIONING: 'true', TEMPORAL_BUILD_ID: buildId });

const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('worker versioning: a deploy while requests are paused and sessions have history', () => {
  let api: RunningApi;
  let fixtures: Fixtures;
  let temporal: { client: Client; connection: Connection };
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    temporal = await connectTemporal(config);
    workers.push(await startWorker(versioned(BUILD_A)));
    api = await startApi(env);
  });
  afterAll(async () => {
    await api?.close();
    for (const w of workers.reverse()) await w.close();
    if (temporal) await clearTaskQueue(temporal.client, taskQueue, 'worker-versioning e2e finished');
    await temporal?.connection.close();
    await fixtures?.close();
  }, APP_CLOSE_TIMEOUT_MS);

  const call = (method: string, path: string, auth: Record<string, string>, body?: unknown) =>
    request(api.url, method, path, { headers: auth, body });
  /** The build ids of the workers that completed the workflow's tasks, in order. */
  const buildsOf = async (workflowId: string): Promise<string[]> => {
    const history = await temporal.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).flatMap((e) => {
      const done = e.workflowTaskCompletedEventAttributes;
      if (!done) return [];
      return [done.deploymentVersion?.buildId ?? done.workerVersion?.buildId ?? 'unversioned'];
    });
  };
  const cli = async (...argv: string[]): Promise<{ code: number; out: string }> => {
    let out = '';
    const io = {
      out: (s: string) => void (out += s),
      err: (s: string) => void (out += s),
      readStdin: async () => '',
      env: {},
    };
    const code = await runCli(argv, loadConfig({ ...process.env, ...env }), io);
    return { code, out };
  };

  it('keeps a paused request on the build that started it, starts new ones on the current build, and moves sessions to it', async () => {
    const { auth } = await fixtures.project({ credits: 100 });
    // The first build of a new deployment makes itself current, once its first poll registered it
    // (after the worker is ready, not before: wait for it).
    await eventually(async () =>
      expect(
        (await describeDeployment(temporal.connection.workflowService, config.temporal.namespace, taskQueue))?.current,
      ).toBe(BUILD_A),
    );

    const paused = await call('POST', '/v1/agent', auth, {
      message: 'Weather? get_weather {"city":"Oslo"}',
      tools: [weatherTool],
    });
    expect(paused.body).toMatchObject({ status: 'requires_tool_outputs' });
    const session = (await call('POST', '/v1/sessions', auth)).body;
    expect(
      (await call('POST', `/v1/sessions/${session.id}/messages`, auth, { message: 'My name is Ada.' })).body,
    ).toMatchObject({ status: 'completed' });

    // Build B polls beside A; it is not current until an operator promotes it.
    workers.push(await startWorker(versioned(BUILD_B)));
    const before = await cli('deploy', 'status', '--json');
    expect(before.code).toBe(0);
    expect(JSON.parse(before.out)).toMatchObject({
      deployment: taskQueue,
      current: BUILD_A,
      builds: expect.arrayContaining([expect.objectContaining({ build_id: BUILD_B, status: 'inactive' })]),
    });
    const promoted = await cli('deploy', 'promote', BUILD_B, '--json');
    expect(promoted.code).toBe(0);
    expect(JSON.parse(promoted.out)).toMatchObject({ current: BUILD_B, previous: BUILD_A, changed: true });

    // The paused request is answered by A, which started it.
    const continued = await call('POST', `/v1/agent/${paused.body.id}/tool-outputs`, auth, {
      tool_outputs: [{ tool_call_id: paused.body.tool_calls[0].id, output: 'Sunny, 21 C' }],
      _compute_instance: paused.body._compute_instance,
    });
    expect(continued.body).toMatchObject({ id: paused.body.id, status: 'completed' });
    expect(new Set(await buildsOf(agentRequestWorkflowId(paused.body.id)))).toEqual(new Set([BUILD_A]));

    // A new request runs on B.
    const fresh = await call('POST', '/v1/agent', auth, { message: 'Hello after the deploy' });
    expect(fresh.body).toMatchObject({ status: 'completed' });
    expect(new Set(await buildsOf(agentRequestWorkflowId(fresh.body.id)))).toEqual(new Set([BUILD_B]));

    // The session, started on A, answers its next message on B, and so does that message's run.
    const next = await call('POST', `/v1/sessions/${session.id}/messages`, auth, { message: 'What is my name?' });
    expect(next.body).toMatchObject({ status: 'completed' });
    const sessionBuilds = await buildsOf(sessionWorkflowId(session.id));
    expect(sessionBuilds[0]).toBe(BUILD_A);
    expect(sessionBuilds.at(-1)).toBe(BUILD_B);
    expect(new Set(await buildsOf(agentRequestWorkflowId(next.body.id)))).toEqual(new Set([BUILD_B]));

    // Rolling back is promoting A again: new requests run on A. The session, which has run on
    // B (whose history may hold what A cannot replay), stays on B until it ends (issue 45).
    const rolledBack = await cli('deploy', 'promote', BUILD_A, '--json');
    expect(rolledBack.code).toBe(0);
    expect(JSON.parse(rolledBack.out)).toMatchObject({ current: BUILD_A, previous: BUILD_B, changed: true });
    expect(JSON.parse(rolledBack.out).kept_on_newer_builds).toBeGreaterThanOrEqual(1);
    const after = await call('POST', '/v1/agent', auth, { message: 'Hello after the rollback' });
    expect(new Set(await buildsOf(agentRequestWorkflowId(after.body.id)))).toEqual(new Set([BUILD_A]));
    const third = await call('POST', `/v1/sessions/${session.id}/messages`, auth, { message: 'Still there?' });
    expect(third.body).toMatchObject({ status: 'completed' });
    expect((await buildsOf(sessionWorkflowId(session.id))).at(-1)).toBe(BUILD_B);

    // deploy status: B keeps the session (pinned there), so it may not stop yet; once the session
    // ends, B has no pinned run and may stop.
    const status = async () =>
      (JSON.parse((await cli('deploy', 'status', '--json')).out) as { builds: Record<string, unknown>[] }).builds.find(
        (b) => b['build_id'] === BUILD_B,
      );
    expect(await status()).toMatchObject({ may_stop: false });
    expect((await status())!['open_runs']).toBeGreaterThanOrEqual(1);
    expect((await call('DELETE', `/v1/sessions/${session.id}`, auth)).status).toBe(200);
    await eventually(async () => expect(await status()).toMatchObject({ open_runs: 0, may_stop: true }), 30_000);
  });

  it('never lets a restarted worker of an older build make itself current over a newer one (on-start)', async () => {
    expect((await cli('deploy', 'promote', BUILD_B)).code).toBe(0);
    // The older build's worker starts again, as a supervisor restarts it, told to promote on start.
    workers.push(await startWorker({ ...versioned(BUILD_A), TEMPORAL_DEPLOYMENT_PROMOTE: 'on-start' }));
    const state = await describeDeployment(temporal.connection.workflowService, config.temporal.namespace, taskQueue);
    expect(state?.current).toBe(BUILD_B);
  });
});
