// The drill's deploy phase (scripts/drill/drill.mjs): with requests paused for tool outputs
// (plain, background and session messages), sessions with history, and an open stream and a
// background run streaming their model's words, the worker is
// rolled to a build whose workflow code changed the way a real feature changes it (one more step
// before the model call in the agent workflow, behind patched()), made current, then rolled back
// to the original build while the new one drains. Every paused request must continue, every
// session answer its next message, and no workflow task may fail (nondeterminism) on either build.
//
// The new build is made from a copy of the build's output (dist/, never the repository's
// sources): its agent workflow edited, bundled again, and given its own build id, in the drill's
// run directory with node_modules linked, as a deploy ships a new dist.
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { promoteBuild } from '#libs/temporal';

const PATCH_ID = 'drill-deploy-step';

/** Builds the changed worker under `dir` from ROOT's dist; returns its root and build id. */
export async function changedBuild(root, dir) {
  mkdirSync(dir, { recursive: true });
  cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(join(root, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  const file = join(dir, 'dist/workflows/src/agent-request.workflow.js');
  const source = readFileSync(file, 'utf8');
  const call = 'const { step, seq } = await conversation.callModel(';
  const imports = "from '@temporalio/workflow';";
  if (!source.includes(call) || !source.includes(imports))
    throw new Error('the deploy drill cannot find the model call in the agent workflow: change changedBuild() with it');
  const changed = source
    .replace(
      imports,
      `${imports}\nimport { patched as drillPatched, sleep as drillSleep } from '@temporalio/workflow';`,
    )
    .replace(call, `if (drillPatched('${PATCH_ID}')) await drillSleep('10 ms');\n        ${call}`);
  writeFileSync(file, changed);
  const { code } = await bundleWorkflowCode({
    workflowsPath: join(dir, 'dist/workflows/src/index.js'),
    failureConverterPath: join(dir, 'dist/libs/temporal/src/failure-converter.cjs'),
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} },
  });
  writeFileSync(join(dir, 'dist/workflows/bundle.js'), code);
  const original = readFileSync(join(root, 'dist/workflows/build-id'), 'utf8').trim();
  const buildId = `${original}.drill-changed`;
  writeFileSync(join(dir, 'dist/workflows/build-id'), `${buildId}\n`);
  return { root: dir, buildId, original };
}

/**
 * Runs the deploy scenario against the apps of `ctx` (one api, a worker of the original build on
 * `taskQueue`), starting `startWorker(root)` for the changed build. Returns the problems found.
 */
export async function deployScenario(ctx) {
  const { api, send, agent, temporal, namespace, taskQueue, accounts, startWorker, runDir, root, log, quick, db } = ctx;
  const problems = [];
  const projects = [];
  for (let i = 0; i < 2; i++) {
    const p = await accounts.createProject({
      name: `drill-deploy-${Date.now()}-${i}`,
      plan: 'pro',
      capabilities: ['chat'],
    });
    await accounts.addCredits(p.id, 1000);
    await accounts.setModel(p.id, { provider: 'scripted', model: 'scripted-drill' });
    projects.push({ id: p.id, auth: `Bearer ${(await accounts.createApiKey(p.id, 'npm run drill deploy')).key}` });
  }
  const tool = {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  };
  // A 429 rate_limited is no answer (the phase's projects share the load's minute): sent again
  // after its Retry-After, as a careful client does.
  const http = async (method, path, auth, body, headers = {}) => {
    let res = await send({
      agent,
      method,
      url: `${api.url}${path}`,
      headers: { authorization: auth, ...headers },
      body,
      timeoutMs: 60_000,
    });
    for (let i = 0; i < 10 && res.status === 429 && /"rate_limited"/.test(res.body ?? ''); i++) {
      await new Promise((resolve) => setTimeout(resolve, Number(res.headers?.['retry-after'] ?? 1) * 1000));
      res = await send({
        agent,
        method,
        url: `${api.url}${path}`,
        headers: { authorization: auth, ...headers },
        body,
        timeoutMs: 60_000,
      });
    }
    let json;
    try {
      json = JSON.parse(res.body);
    } catch {
      json = undefined;
    }
    return { status: res.status, body: json, raw: res.body };
  };
  const pausedOnes = [];
  const pause = async (kind, p) => {
    const body = {
      message: 'Weather? get_weather {"city":"Oslo"}',
      tools: [tool],
      ...(kind === 'background' ? { background: true } : {}),
    };
    const res = await http('POST', '/v1/agent', p.auth, body);
    if (res.status !== 200 || !res.body?.id)
      return problems.push(`a ${kind} request was not started: ${res.status} ${String(res.raw).slice(0, 200)}`);
    pausedOnes.push({ kind, id: res.body.id, auth: p.auth });
  };
  // Runs still going when the build changes: an open stream and a background run, each streaming a
  // few seconds of words (the scripted model pauses 10 ms between words).
  const long = `Tell me ${'many '.repeat(quick ? 300 : 600)}words`;
  const running = [];
  const openRuns = (p) => {
    running.push(
      http('POST', '/v1/agent', p.auth, { message: long, stream: true }).then((res) => {
        if (res.status !== 200 || !/event: done/.test(res.raw ?? '') || !/"status":"completed"/.test(res.raw ?? ''))
          problems.push(`an open stream did not end with done/completed: ${res.status} ${String(res.raw).slice(-200)}`);
      }),
      http('POST', '/v1/agent', p.auth, { message: long, background: true }).then(async (res) => {
        let status = res.body?.status;
        for (let i = 0; i < 300 && status !== 'completed' && res.body?.id; i++) {
          await new Promise((resolve) => setTimeout(resolve, 200));
          status = (await http('GET', `/v1/agent/${res.body.id}`, p.auth)).body?.status;
        }
        if (status !== 'completed')
          problems.push(`a background run ended ${status}: ${res.status} ${String(res.raw).slice(0, 200)}`);
      }),
    );
  };
  const sessions = [];
  const session = async (p) => {
    const s = await http('POST', '/v1/sessions', p.auth);
    const first = await http('POST', `/v1/sessions/${s.body?.id}/messages`, p.auth, { message: 'My name is Ada.' });
    if (first.body?.status !== 'completed')
      return problems.push(`a session's first message: ${first.status} ${String(first.raw).slice(0, 200)}`);
    sessions.push({ id: s.body.id, auth: p.auth });
  };
  const sessionPause = async (p) => {
    const s = await http('POST', '/v1/sessions', p.auth);
    const m = await http('POST', `/v1/sessions/${s.body?.id}/messages`, p.auth, {
      message: 'Weather? get_weather {"city":"Oslo"}',
      tools: [tool],
    });
    if (m.body?.status !== 'requires_tool_outputs')
      return problems.push(`a session message did not pause: ${m.status} ${String(m.raw).slice(0, 200)}`);
    pausedOnes.push({ kind: 'session message', id: m.body.id, auth: p.auth, session: s.body.id });
  };
  /** Everything in flight, on whichever build is current. */
  const inFlight = async () => {
    const n = quick ? 1 : 2;
    for (let i = 0; i < n; i++) {
      const p = projects[i % projects.length];
      for (const kind of ['plain', 'background']) await pause(kind, p);
      await session(p);
      await sessionPause(p);
    }
  };
  /** Answers the tool outputs of the paused requests `ones`, reading the paused state first. */
  const answer = async (ones) => {
    for (const r of ones) {
      let read;
      for (let i = 0; i < 50; i++) {
        read = await http('GET', `/v1/agent/${r.id}`, r.auth);
        if (read.body?.status === 'requires_tool_outputs') break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      if (read.body?.status !== 'requires_tool_outputs') {
        problems.push(`${r.kind} request ${r.id} is ${read.status} ${read.body?.status} before its tool outputs`);
        continue;
      }
      const res = await http('POST', `/v1/agent/${r.id}/tool-outputs`, r.auth, {
        tool_outputs: [{ tool_call_id: read.body.tool_calls[0].id, output: 'Sunny, 21 C' }],
        _compute_instance: read.body._compute_instance,
      });
      let status = res.body?.status;
      if (r.kind === 'background' || r.kind === 'stream') {
        for (let i = 0; i < 100 && status !== 'completed'; i++) {
          await new Promise((resolve) => setTimeout(resolve, 200));
          status = (await http('GET', `/v1/agent/${r.id}`, r.auth)).body?.status;
        }
      }
      if (status !== 'completed')
        problems.push(
          `${r.kind} request ${r.id}: its tool outputs got ${res.status} ${String(res.raw).slice(0, 200)} (then ${status})`,
        );
      r.done = true;
    }
  };
  const nextMessages = async () => {
    for (const s of sessions) {
      const res = await http('POST', `/v1/sessions/${s.id}/messages`, s.auth, { message: 'What is my name?' });
      if (res.body?.status !== 'completed')
        problems.push(`session ${s.id}'s next message: ${res.status} ${String(res.raw).slice(0, 200)}`);
    }
  };
  const service = temporal.connection.workflowService;
  const promote = (buildId) => promoteBuild(service, namespace, taskQueue, buildId, { identity: 'npm run drill' });

  const since = new Date().toISOString();
  log('deploy: in flight on the original build');
  await inFlight();
  const changed = await changedBuild(root, join(runDir, 'build-changed'));
  log(`deploy: rolling to ${changed.buildId}`);
  openRuns(projects[0]);
  const workerB = await startWorker(changed.root);
  await promote(changed.buildId);
  const bornOnA = pausedOnes.splice(0);
  await answer(bornOnA.slice(0, Math.ceil(bornOnA.length / 2)));
  await nextMessages();
  log('deploy: in flight on the changed build');
  await inFlight();
  openRuns(projects[1]);
  log(`deploy: rolling back to ${changed.original}`);
  await promote(changed.original);
  await answer([...bornOnA.slice(Math.ceil(bornOnA.length / 2)), ...pausedOnes]);
  await nextMessages();
  await Promise.all(running);

  // No workflow task failed on either build (a nondeterminism error fails the task and retries it forever).
  let failedTasks = 0;
  let workflows = 0;
  for await (const wf of temporal.client.workflow.list({
    query: `TaskQueue = '${taskQueue}' AND StartTime >= '${since}'`,
  })) {
    workflows++;
    const history = await temporal.client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
    const failed = (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes);
    if (failed.length) {
      failedTasks += failed.length;
      problems.push(
        `${wf.workflowId}: ${failed.length} failed workflow task(s): ${failed[0].workflowTaskFailedEventAttributes.failure?.message ?? ''}`.slice(
          0,
          300,
        ),
      );
    }
  }
  // The changed build's runs drained once its pinned requests finished: it may stop.
  await workerB.stop();
  // Nothing held: no reservation without its settlement, no run slot, no request charged twice.
  const ids = projects.map((p) => p.id);
  const [{ n: open }] = await db.query(
    `select count(*)::int as n from credit_ledger r where r.kind = 'reserve' and r.project_id = any($1) and not exists (select 1 from credit_ledger s where s.request_id = r.request_id and s.kind = 'settle')`,
    [ids],
  );
  if (open) problems.push(`${open} reservation(s) of the deploy's requests still open`);
  const twice = await db.query(
    `select request_id from credit_ledger where kind = 'settle' and credits > 0 and project_id = any($1) group by request_id having count(*) > 1`,
    [ids],
  );
  if (twice.length) problems.push(`${twice.length} request(s) of the deploy charged twice`);
  const off = await db.query(
    `select p.id from projects p where p.id = any($1) and p.credit_balance <> 1000 - coalesce((select sum(credits) from credit_ledger s where s.project_id = p.id and s.kind = 'settle'), 0)`,
    [ids],
  );
  if (off.length) problems.push(`${off.length} deploy project balance(s) off`);
  const stuck = [];
  for await (const wf of temporal.client.workflow.list({
    query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running' AND WorkflowType = 'agentRequestWorkflow' AND ProjectId IN (${ids.map((id) => `'${id}'`).join(', ')})`,
  }))
    stuck.push(wf.workflowId);
  if (stuck.length)
    problems.push(`${stuck.length} agent request(s) still running after every one was answered, e.g. ${stuck[0]}`);
  log(
    `deploy: ${workflows} workflow(s) checked, ${failedTasks} failed workflow task(s), ${sessions.length} session(s), ${problems.length} problem(s)`,
  );
  return { problems, failedTasks, workflows };
}
