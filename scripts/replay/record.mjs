// The replay corpus's recorder behind `npm run replay:record` (scripts/replay/run.sh prepares the
// build, the stack and a database of its own, then runs this). It runs the real apps from dist/
// (api, worker, worker-long, relay) on a task queue of their own, drives every workflow type along each of its
// paths over HTTP as a client would, fetches each workflow's history from Temporal and writes it,
// in Temporal's history JSON, to test/replay/histories/<set>/<workflowType>/<path>.json with the
// set's manifest.json. workflows/test/replay.workflow-spec.ts (in `npm test`) replays every history
// against the current workflow code: a change to workflow code that would break a run in flight
// fails there, naming the history, the workflow and the event (docs/decisions.md, "Changing
// workflow code").
//
// Payloads are encrypted with the corpus's own committed, test-only key (test/replay/
// payload-key.json), not the machine's, so the histories replay on any machine. Before anything
// is written, every payload is decrypted and the histories are searched for the machine's secrets,
// the projects' API keys and the webhook secrets: one found stops the recorder with nothing written.
//
// Options: --set <name> (the directory under test/replay/histories; default: today's date, UTC).
// A set of the same name is replaced; other sets are left alone (keep them while their paths can
// still be in flight: docs/decisions.md).
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join, relative, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import {
  agentRequestWorkflowId,
  ledgerReconcilerScheduleId,
  SEARCH_ATTRIBUTES,
  sessionWorkflowId,
  webhookWorkflowId,
} from '#libs/contracts';
import { loadConfig, requireTemporalAddress } from '#libs/config';
import { AesGcmPayloadCodec, clearTaskQueue, historyToJson, payloadDataConverter } from '#libs/temporal';
import { WebhookStore } from '#libs/webhooks';
import { keepAliveAgent, send } from '../bench/lib/http.mjs';
import { openAccounts } from '../bench/lib/key-pool.mjs';
import { freePorts, startProcess, stopAll, tail } from '../bench/lib/procs.mjs';
import { appProcess } from '../app-process.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CORPUS = join(ROOT, 'test/replay/histories');
const { values: args } = parseArgs({
  options: { set: { type: 'string', default: new Date().toISOString().slice(0, 10) } },
});
if (!/^[\w.-]+$/.test(args.set)) throw new Error(`--set must be a plain directory name, not "${args.set}"`);

const env = process.env;
const RUN_DIR = env.REPLAY_RUN_DIR ?? '/tmp';
const TS = env.REPLAY_TS ?? String(Date.now());
const TASK_QUEUE = `replay-record-${TS}`;
/** Paused requests expire after this long here (TOOL_OUTPUTS_TIMEOUT_MS), so the expiry is recorded in seconds. */
const TOOL_OUTPUTS_TIMEOUT_MS = 2000;
/** The recorded session continues as new once its run's history has this many events (the input
 * field the workflow tests use; the api leaves it to the default of 2000): after three messages. */
const SESSION_CONTINUE_AS_NEW_AFTER_EVENTS = 50;

// The corpus's own payload key (test-only, committed), instead of the machine's.
const corpusKey = JSON.parse(readFileSync(join(ROOT, 'test/replay/payload-key.json'), 'utf8'));
const machineSecrets = [
  env.MAS_MASTER_KEY,
  env.MAS_API_KEY_PEPPER,
  env.MAS_CODEC_TOKEN,
  ...(env.MAS_PAYLOAD_KEYS ?? '').split(',').map((pair) => pair.split(':')[1]),
].filter((s) => s && s.length >= 16);
const appEnv = {
  ...env,
  MAS_PAYLOAD_KEYS: `${corpusKey.id}:${corpusKey.key}`,
  MAS_PAYLOAD_KEY_CURRENT: corpusKey.id,
  TEMPORAL_TASK_QUEUE: TASK_QUEUE,
  // As `npm start` runs them: the long activities on a worker of their own (docs/operations.md).
  TEMPORAL_LONG_ACTIVITY_TASK_QUEUE: `${TASK_QUEUE}-long`,
  KAFKA_GROUP_PREFIX: `mas-replay-${TS}`,
  TOOL_OUTPUTS_TIMEOUT_MS: String(TOOL_OUTPUTS_TIMEOUT_MS),
  // The webhook receiver runs on loopback; retries come fast, and run out after 3 s for the
  // receiver that always fails.
  WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
  WEBHOOK_RETRY_INITIAL_INTERVAL_MS: '200',
  WEBHOOK_RETRY_MAXIMUM_INTERVAL_MS: '500',
  WEBHOOK_RETRY_FOR_MS: '3000',
  WEBHOOK_TIMEOUT_MS: '5000',
  // The reconciler's schedule exists (the worker creates it) but is triggered by hand below.
  RECONCILER_INTERVAL_SECONDS: '3600',
};
delete appEnv.OTEL_EXPORTER_OTLP_ENDPOINT;
const config = loadConfig(appEnv);

const t0 = performance.now();
const log = (s) => process.stderr.write(`[replay +${((performance.now() - t0) / 1000).toFixed(1)}s] ${s}\n`);
const agent = keepAliveAgent(8);

const cleanups = [];
let cleaningUp;
const cleanup = () =>
  (cleaningUp ??= (async () => {
    for (const fn of cleanups.reverse()) await fn().catch((e) => log(`cleanup: ${e.message}`));
  })());
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => void cleanup().finally(() => process.exit(130)));

// ---------------------------------------------------------------------------------------------
// Apps, client, receiver

async function startApps() {
  const [port] = await freePorts(1);
  const apps = ['worker', 'worker-long', 'relay', 'api'].map((name) => {
    const { command, args: nodeArgs, env: extra } = appProcess(name);
    return startProcess({
      name,
      command,
      args: nodeArgs,
      env: {
        ...appEnv,
        ...extra,
        ...(name === 'api' ? { PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` } : {}),
      },
      logFile: join(RUN_DIR, `${name}.log`),
      pidFile: join(RUN_DIR, 'pids'),
    });
  });
  cleanups.push(() => stopAll(apps, 20_000));
  const api = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  const ready = { worker: 'polling task queue', 'worker-long': 'polling task queue', relay: 'relaying' };
  for (const app of apps) {
    for (;;) {
      if (app.exited) throw new Error(`${app.name} exited (${app.exitCode}):\n${tail(app.logFile)}`);
      if (Date.now() > deadline) throw new Error(`${app.name} was not ready within 120 s:\n${tail(app.logFile)}`);
      const up =
        app.name === 'api'
          ? (await send({ agent, method: 'GET', url: `${api}/healthz`, timeoutMs: 2000 })).status === 200
          : existsSync(app.logFile) && readFileSync(app.logFile, 'utf8').includes(ready[app.name]);
      if (up) break;
      await sleep(200);
    }
  }
  return api;
}

/** A webhook receiver on loopback: `/flaky` answers 500 to the first two attempts of each
 * webhook-id and 200 after; `/always-500` always fails. */
async function startReceiver() {
  const seen = new Map();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const key = `${req.url} ${req.headers['webhook-id']}`;
      const n = (seen.get(key) ?? 0) + 1;
      seen.set(key, n);
      res.writeHead(req.url === '/flaky' && n > 2 ? 200 : 500).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${server.address().port}`;
}

const json = (res) => {
  try {
    return JSON.parse(res.body);
  } catch {
    return undefined;
  }
};

/** Waits until `check()` returns something, or throws after `ms`. */
async function until(what, check, ms = 60_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

// ---------------------------------------------------------------------------------------------
// The paths

async function main() {
  const { accounts, db, close } = await openAccounts(appEnv);
  cleanups.push(close);
  const connection = await Connection.connect({ address: requireTemporalAddress(config) });
  const client = new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter: payloadDataConverter(config),
  });
  cleanups.push(async () => {
    const n = await clearTaskQueue(client, TASK_QUEUE, 'npm run replay:record finished');
    if (n) log(`terminated ${n} open workflow(s) of ${TASK_QUEUE}`);
    await connection.close();
  });
  const receiver = await startReceiver();
  log(`starting worker, worker-long, relay and api on task queue ${TASK_QUEUE} (logs in ${RUN_DIR})`);
  const api = await startApps();

  const secrets = [...machineSecrets];
  const project = async (name, { credits = 1000, model = { provider: 'scripted', model: 'scripted' } } = {}) => {
    const p = await accounts.createProject({ name: `replay-${TS}-${name}`, plan: 'pro' });
    if (credits > 0) await accounts.addCredits(p.id, credits);
    await accounts.setModel(p.id, model);
    if (model.apiKey) secrets.push(model.apiKey);
    const { key } = await accounts.createApiKey(p.id, 'npm run replay:record');
    secrets.push(key);
    return { id: p.id, headers: { authorization: `Bearer ${key}` } };
  };
  const call = async (p, method, path, body, timeoutMs = 60_000) => {
    const res = await send({ agent, method, url: `${api}${path}`, headers: p.headers, body, timeoutMs });
    const parsed = json(res);
    if (res.status !== 200 && res.status !== 201)
      throw new Error(`${method} ${path}: ${res.status} ${res.error ?? res.body.slice(0, 300)}`);
    return parsed ?? res.body;
  };
  const closed = async (workflowId, runId) => {
    const handle = client.workflow.getHandle(workflowId, runId);
    return until(`${workflowId} to close`, async () => {
      const { status } = await handle.describe();
      return status.name !== 'RUNNING' && status.name;
    });
  };
  const getStatus = (p, id, status) =>
    until(`request ${id} to be ${status}`, async () => (await call(p, 'GET', `/v1/agent/${id}`)).status === status);

  /** What is recorded: [workflowType, path, what the run did, workflowId, runId?]. */
  const recorded = [];
  /** Records a closed run; `expected`, when given, is the `status` its result must have (the
   * request's last stop, the delivery's outcome), so a path that ran otherwise is not recorded
   * under its name. */
  const take = async (workflowType, path, description, workflowId, runId, expected) => {
    const status = await closed(workflowId, runId);
    const outcome =
      status === 'COMPLETED' ? (await client.workflow.getHandle(workflowId, runId).result())?.status : undefined;
    if (expected && outcome !== expected)
      throw new Error(
        `${workflowType}/${path}: the run ended ${status} with the result status ${outcome}, not ${expected}`,
      );
    recorded.push({ workflowType, path, description, workflowId, runId, status, ...(outcome ? { outcome } : {}) });
    log(`  ${workflowType}/${path}: ${status}${outcome ? ` (${outcome})` : ''}`);
  };

  const weather = [
    {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  ];
  const pauseBody = { message: 'What is the weather? get_weather {"city":"Oslo"}', tools: weather };
  const manyWords = `Tell me something in many words: ${Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ')}`;
  const agentProject = await project('agent');

  log('agent requests');
  {
    const r = await call(agentProject, 'POST', '/v1/agent', { message: 'Hello from the replay corpus.' });
    await take(
      'agentRequestWorkflow',
      'one-shot',
      'one model call, completed (the caller waits: the model is a local activity)',
      agentRequestWorkflowId(r.id),
      undefined,
      'completed',
    );
  }
  {
    const r = await call(agentProject, 'POST', '/v1/agent', {
      message: 'run_javascript {"code":"[1,2,3].map(x => x * x)"}',
      capabilities: ['chat', 'code'],
    });
    await take(
      'agentRequestWorkflow',
      'builtin-tool',
      'a built-in tool (run_javascript) between two model calls, completed',
      agentRequestWorkflowId(r.id),
      undefined,
      'completed',
    );
  }
  {
    const paused = await call(agentProject, 'POST', '/v1/agent', pauseBody);
    await call(agentProject, 'POST', `/v1/agent/${paused.id}/tool-outputs`, {
      tool_outputs: [{ tool_call_id: paused.tool_calls[0].id, output: 'Sunny, 21 C' }],
      _compute_instance: paused._compute_instance,
    });
    await take(
      'agentRequestWorkflow',
      'tool-pause-continue',
      'paused for a custom tool, its output submitted (Update), completed',
      agentRequestWorkflowId(paused.id),
      undefined,
      'completed',
    );
  }
  {
    const paused = await call(agentProject, 'POST', '/v1/agent', pauseBody);
    await getStatus(agentProject, paused.id, 'expired');
    await take(
      'agentRequestWorkflow',
      'tool-pause-expire',
      `paused for a custom tool, no output within TOOL_OUTPUTS_TIMEOUT_MS (${TOOL_OUTPUTS_TIMEOUT_MS} ms): expired`,
      agentRequestWorkflowId(paused.id),
      undefined,
      'expired',
    );
  }
  {
    const paused = await call(agentProject, 'POST', '/v1/agent', pauseBody);
    await call(agentProject, 'POST', `/v1/agent/${paused.id}/cancel`);
    await take(
      'agentRequestWorkflow',
      'cancel-paused',
      'paused for a custom tool, then cancelled',
      agentRequestWorkflowId(paused.id),
      undefined,
      'cancelled',
    );
  }
  {
    const started = await call(agentProject, 'POST', '/v1/agent', { message: manyWords, background: true });
    // The scripted model streams a word every 10 ms: 400 words take 4 s; cancel while it streams.
    await sleep(1000);
    await call(agentProject, 'POST', `/v1/agent/${started.id}/cancel`);
    await take(
      'agentRequestWorkflow',
      'cancel-running',
      'background, cancelled while the model streamed (activity cancelled, partial message)',
      agentRequestWorkflowId(started.id),
      undefined,
      'cancelled',
    );
  }
  {
    const started = await call(agentProject, 'POST', '/v1/agent', {
      message: 'Run this in the background.',
      background: true,
    });
    await getStatus(agentProject, started.id, 'completed');
    await take(
      'agentRequestWorkflow',
      'background',
      'background (in_progress at once, the model as a regular activity, stream events), completed',
      agentRequestWorkflowId(started.id),
      undefined,
      'completed',
    );
  }
  {
    const res = await send({
      agent,
      url: `${api}/v1/agent`,
      headers: agentProject.headers,
      body: { message: 'Stream this answer, please.', stream: true },
      timeoutMs: 60_000,
    });
    const id = res.headers['x-request-id'];
    if (res.status !== 200 || !id) throw new Error(`a streamed request: ${res.status} ${res.body.slice(0, 300)}`);
    await take(
      'agentRequestWorkflow',
      'streamed',
      'streamed (SSE): stream events, the model as a regular activity, completed',
      agentRequestWorkflowId(id),
      undefined,
      'completed',
    );
  }

  {
    // A request first taken up after the api's pickup deadline (acceptBy): the api told its caller
    // 502 and the run must not go on. Started here with the one-shot's input and a deadline in the
    // past (an api cannot make a worker late on purpose).
    const oneShot = recorded.find((r) => r.path === 'one-shot');
    const history = await client.workflow.getHandle(oneShot.workflowId).fetchHistory();
    const [input] = (
      await AesGcmPayloadCodec.fromConfig(config).decode(
        history.events[0].workflowExecutionStartedEventAttributes.input.payloads,
      )
    ).map((payload) => defaultPayloadConverter.fromPayload(payload));
    const requestId = randomUUID();
    const handle = await client.workflow.start('agentRequestWorkflow', {
      workflowId: agentRequestWorkflowId(requestId),
      taskQueue: TASK_QUEUE,
      args: [{ ...input, requestId, acceptBy: Date.now() - 1000 }],
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.projectId, value: input.projectId },
        { key: SEARCH_ATTRIBUTES.agentStatus, value: 'in_progress' },
        { key: SEARCH_ATTRIBUTES.capabilities, value: [...input.capabilities] },
      ],
    });
    await take(
      'agentRequestWorkflow',
      'pickup-missed',
      'first taken up after the pickup deadline (acceptBy): failed (compute_unavailable), nothing reserved',
      handle.workflowId,
      handle.firstExecutionRunId,
      'failed',
    );
  }
  {
    // A project without credits: the api's admission refuses it, 402, and starts no workflow (so
    // there is no history to record since admission moved to the api; sets recorded before keep
    // their 'admission-refused' path, the workflow's admission).
    const p = await project('no-credits', { credits: 0 });
    const res = await send({
      agent,
      url: `${api}/v1/agent`,
      headers: p.headers,
      body: { message: 'Hello without credits.' },
      timeoutMs: 60_000,
    });
    if (res.status !== 402) throw new Error(`a request without credits: ${res.status} ${res.body.slice(0, 300)}`);
    const started = await client.workflow
      .getHandle(agentRequestWorkflowId(res.headers['x-request-id']))
      .describe()
      .then(
        () => true,
        () => false,
      );
    if (started) throw new Error('a request refused at admission started a workflow');
  }
  {
    // A model nobody answers (a closed port on loopback): the model call's retries run out, 502.
    const [closedPort] = await freePorts(1);
    const p = await project('model-down', {
      model: {
        provider: 'openai',
        model: 'replay-corpus',
        baseUrl: `http://127.0.0.1:${closedPort}/v1`,
        apiKey: 'replay-corpus-no-key',
      },
    });
    const res = await send({
      agent,
      url: `${api}/v1/agent`,
      headers: p.headers,
      body: { message: 'Hello to a model that is down.' },
      timeoutMs: 60_000,
    });
    if (res.status !== 502)
      throw new Error(`a request to a model that is down: ${res.status} ${res.body.slice(0, 300)}`);
    await take(
      'agentRequestWorkflow',
      'model-failed',
      "the model could not be reached: the model call's retries ran out, failed (compute_unavailable), reservation released",
      agentRequestWorkflowId(res.headers['x-request-id']),
      undefined,
      'failed',
    );
  }

  log('a session: messages, a tool pause, continue-as-new, end');
  {
    const p = await project('session');
    const session = await call(p, 'POST', '/v1/sessions', {});
    const workflowId = sessionWorkflowId(session.id);
    // The api started the session with the default hand-over (2000 events). The recorder replaces
    // that run (nothing happened in it yet) by one with the same input that hands over after
    // SESSION_CONTINUE_AS_NEW_AFTER_EVENTS events, the input field the workflow tests use.
    const first = await client.workflow.getHandle(workflowId).fetchHistory();
    const [input] = (
      await AesGcmPayloadCodec.fromConfig(config).decode(
        first.events[0].workflowExecutionStartedEventAttributes.input.payloads,
      )
    ).map((payload) => defaultPayloadConverter.fromPayload(payload));
    const handle = await client.workflow.start('sessionWorkflow', {
      workflowId,
      taskQueue: TASK_QUEUE,
      args: [{ ...input, continueAsNewAfterEvents: SESSION_CONTINUE_AS_NEW_AFTER_EVENTS }],
      workflowIdConflictPolicy: 'TERMINATE_EXISTING',
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.projectId, value: p.id },
        { key: SEARCH_ATTRIBUTES.agentStatus, value: 'active' },
        { key: SEARCH_ATTRIBUTES.capabilities, value: ['chat', 'research', 'documents', 'code', 'data', 'files'] },
      ],
    });
    const firstRunId = handle.firstExecutionRunId;
    const message = (body) => call(p, 'POST', `/v1/sessions/${session.id}/messages`, body);
    const m1 = await message({ message: 'Hello, session.' });
    const m2 = await message(pauseBody);
    if (m2.status !== 'requires_tool_outputs') throw new Error(`the session's tool message: ${m2.status}`);
    await call(p, 'POST', `/v1/agent/${m2.id}/tool-outputs`, {
      tool_outputs: [{ tool_call_id: m2.tool_calls[0].id, output: 'Sunny, 21 C' }],
      _compute_instance: m2._compute_instance,
    });
    let sent = 2;
    for (; sent < 8; sent++) {
      const { status } = await client.workflow.getHandle(workflowId, firstRunId).describe();
      if (status.name === 'CONTINUED_AS_NEW') break;
      await message({ message: `Message ${sent + 1}.` });
      await sleep(300);
    }
    await closed(workflowId, firstRunId);
    const { status } = await client.workflow.getHandle(workflowId, firstRunId).describe();
    if (status.name !== 'CONTINUED_AS_NEW')
      throw new Error(`the session did not continue as new after ${sent} messages (${status.name})`);
    await take(
      'sessionWorkflow',
      'messages-tool-pause-continue-as-new',
      `${sent} messages (the second paused for a custom tool, then continued), then continue-as-new when idle`,
      workflowId,
      firstRunId,
    );
    const { runId: secondRunId } = await client.workflow.getHandle(workflowId).describe();
    await message({ message: 'After the hand-over.' });
    await call(p, 'DELETE', `/v1/sessions/${session.id}`);
    await take(
      'sessionWorkflow',
      'carried-message-end',
      'the run after continue-as-new (carried state): one message, then ended (DELETE, Update)',
      workflowId,
      secondRunId,
      'ended',
    );
    await take(
      'agentRequestWorkflow',
      'session-message',
      "a session's message (child workflow, history slice, tells its session it ended)",
      agentRequestWorkflowId(m1.id),
      undefined,
      'completed',
    );
    await take(
      'agentRequestWorkflow',
      'session-tool-pause',
      "a session's message paused for a custom tool (signals its session), continued, completed",
      agentRequestWorkflowId(m2.id),
      undefined,
      'completed',
    );
  }

  log('webhook deliveries');
  {
    const p = await project('webhooks');
    const store = new WebhookStore(db, config);
    for (const path of ['/flaky', '/always-500'])
      secrets.push((await store.add(p.id, { url: `${receiver}${path}`, events: ['agent.completed'] })).secret);
    await call(p, 'POST', '/v1/agent', { message: 'Deliver this as a webhook.' });
    const deliveries = await until('both webhook deliveries to finish', async () => {
      const list = await store.deliveries(p.id);
      return list.length === 2 && list.every((d) => d.status !== 'pending') && list;
    });
    const subscriptions = await store.list(p.id);
    const to = (path) =>
      deliveries.find((d) => subscriptions.find((s) => s.id === d.subscriptionId).url.endsWith(path));
    await take(
      'webhookDeliveryWorkflow',
      'retried-delivered',
      'a receiver that answered 500 twice, then 200 (activity retries)',
      webhookWorkflowId(to('/flaky').id),
      undefined,
      'delivered',
    );
    await take(
      'webhookDeliveryWorkflow',
      'retries-ran-out',
      'a receiver that always answered 500: retries ran out after WEBHOOK_RETRY_FOR_MS, marked failed',
      webhookWorkflowId(to('/always-500').id),
      undefined,
      'failed',
    );
  }

  log('the ledger reconciler');
  {
    const schedule = client.schedule.getHandle(ledgerReconcilerScheduleId(TASK_QUEUE));
    await schedule.trigger();
    const action = await until('the reconciler schedule to start a run', async () =>
      (await schedule.describe()).info.recentActions.at(-1),
    );
    await take(
      'ledgerReconcilerWorkflow',
      'scheduled-pass',
      'one pass started by its Temporal Schedule',
      action.action.workflow.workflowId,
      action.action.workflow.firstExecutionRunId,
    );
  }

  await write(client, recorded, secrets);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Writing the set

async function write(client, recorded, secrets) {
  const codec = AesGcmPayloadCodec.fromConfig(config);
  const files = [];
  for (const r of recorded) {
    const history = await client.workflow.getHandle(r.workflowId, r.runId).fetchHistory();
    const text = `${JSON.stringify(historyToJson(history), null, 1)}\n`;
    // Nothing secret: neither in the history as stored nor in its decrypted payloads.
    const decoded = (await codec.decode(payloadsOf(history)))
      .map((p) => Buffer.from(p.data ?? []).toString('utf8'))
      .join('\n');
    const leaked = secrets.find((s) => text.includes(s) || decoded.includes(s));
    if (leaked)
      throw new Error(
        `${r.workflowType}/${r.path}: the history holds a secret (${leaked.slice(0, 4)}...): nothing written`,
      );
    files.push({ ...r, text, events: history.events.length });
  }
  const dir = join(CORPUS, args.set);
  rmSync(dir, { recursive: true, force: true });
  for (const f of files) {
    mkdirSync(join(dir, f.workflowType), { recursive: true });
    writeFileSync(join(dir, f.workflowType, `${f.path}.json`), f.text);
  }
  const commit = (() => {
    try {
      return (
        execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim() +
        (execFileSync('git', ['status', '--porcelain', '--', 'workflows', 'libs/contracts'], {
          cwd: ROOT,
          encoding: 'utf8',
        }).trim()
          ? ' (with uncommitted workflow changes)'
          : '')
      );
    } catch {
      return 'unknown';
    }
  })();
  const manifest = {
    recordedAt: new Date().toISOString(),
    recordedFrom: commit,
    payloadKeyId: config.payloadKeys.current,
    recorder: 'npm run replay:record (scripts/replay/record.mjs)',
    histories: files.map((f) => ({
      file: `${f.workflowType}/${f.path}.json`,
      workflowType: f.workflowType,
      path: f.path,
      description: f.description,
      workflowId: f.workflowId,
      closedAs: f.status,
      ...(f.outcome ? { result: f.outcome } : {}),
      events: f.events,
    })),
  };
  writeFileSync(join(dir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const bytes = files.reduce((n, f) => n + f.text.length, 0);
  log(`wrote ${files.length} histories (${Math.round(bytes / 1024)} KB) to ${relative(ROOT, dir)}`);
}

/** Every payload of a fetched history. */
function payloadsOf(value, found = []) {
  if (typeof value !== 'object' || value === null || value instanceof Uint8Array) return found;
  if (value.data instanceof Uint8Array && typeof value.metadata === 'object' && value.metadata !== null)
    found.push(value);
  else for (const child of Object.values(value)) payloadsOf(child, found);
  return found;
}

let code = 2;
try {
  code = await main();
} catch (e) {
  log(`the recorder failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
} finally {
  await cleanup();
  agent.destroy();
}
process.exit(code);
