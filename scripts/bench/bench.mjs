// The benchmark harness behind `npm run bench` (scripts/bench/run.sh prepares the build, the
// stack and the first project, then runs this). It starts two scripted model servers (0 ms and
// 200 ms), the api, worker and projector from dist/ on their own port and task queue, runs the
// scenarios with their baselines in the same run, prints one table and writes it as JSON.
//
// Every loop is bounded in count and time; everything is on loopback; every child process is
// stopped on the way out (and run.sh's trap kills what is left by pid). Timing never fails the
// run: only a harness that cannot measure (an app that does not start, a warm-up without a single
// answer) exits non-zero.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { CAPABILITIES } from '#libs/contracts';
import { summariseProfile } from './lib/cpu-profile.mjs';
import { jsonOf, keepAliveAgent, now, send } from './lib/http.mjs';
import { consumersCaughtUp } from './lib/kafka-lag.mjs';
import { KeyPool, openAccounts } from './lib/key-pool.mjs';
import {
  componentsOf,
  cpuSnapshot,
  delta,
  freePorts,
  machineSnapshot,
  otherLoad,
  rssMb,
  rssPartsMb,
  rssSampler,
  startNode,
  startProcess,
  stopAll,
  threadCpu,
  waitFor,
} from './lib/procs.mjs';
import { buildRows, printTable } from './lib/report.mjs';
import { appProcess } from '../app-process.mjs';
import { closedLoop, difference, fmt, ok, summary } from './lib/stats.mjs';
import { findMetricsUrl, perRequest as temporalPerRequest, scrape, temporalPid } from './lib/temporal-metrics.mjs';
import { openTemporal, waitForTemporal } from './lib/temporal-phases.mjs';
import { projectionPoller, projectionTable, watchUsageTopic } from './lib/usage-pipeline.mjs';
import { openFloorClient } from './floor/client.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    'no-profile': { type: 'boolean', default: false },
    'no-experiments': { type: 'boolean', default: false },
  },
});
const QUICK = args.quick;

/** How much of everything: the full run takes about 10 minutes on 2 cores, --quick under 2. */
const PLAN = QUICK
  ? {
      warmup: 30,
      warmupMs: 4_000,
      settleMs: 1_000,
      settleMaxMs: 5_000,
      idleMs: 1_500,
      overhead: [
        { latency: 0, clients: 1, n: 100, maxMs: 3_500 },
        { latency: 0, clients: 8, n: 320, maxMs: 3_500 },
        { latency: 200, clients: 1, n: 10, maxMs: 2_000 },
        { latency: 200, clients: 8, n: 48, maxMs: 2_000 },
      ],
      toolRounds: 30,
      toolMs: 3_500,
      streaming: { 0: 12, 200: 6 },
      usage: 15,
      usageMs: 4_000,
      usageWaitMs: 5_000,
      phaseSamples: 20,
      floors: 100,
      floorMs: 1_500,
      profileMs: args.profile ? 8_000 : 0,
      levels: [8, 32, 128],
      levelMs: 4_000,
      experiments: false,
      experimentMs: 0,
      baselineLevelMs: 500,
      pool: { 0: 40, 200: 6 },
    }
  : {
      warmup: 100,
      warmupMs: 30_000,
      settleMs: 2_000,
      settleMaxMs: 20_000,
      idleMs: 5_000,
      overhead: [
        { latency: 0, clients: 1, n: 500, maxMs: 30_000 },
        { latency: 0, clients: 8, n: 1500, maxMs: 30_000 },
        { latency: 200, clients: 1, n: 80, maxMs: 20_000 },
        { latency: 200, clients: 8, n: 400, maxMs: 20_000 },
      ],
      toolRounds: 150,
      toolMs: 30_000,
      streaming: { 0: 60, 200: 20 },
      usage: 60,
      usageMs: 25_000,
      usageWaitMs: 10_000,
      phaseSamples: 60,
      floors: 400,
      floorMs: 15_000,
      profileMs: args['no-profile'] ? 0 : 15_000,
      levels: [1, 8, 32, 128],
      levelMs: 20_000,
      experiments: !args['no-experiments'],
      experimentMs: 12_000,
      baselineLevelMs: 3_000,
      pool: { 0: 150, 200: 12 },
    };

const env = process.env;
const need = (name) => {
  const v = env[name];
  if (!v) throw new Error(`${name} is not set (run the benchmark with npm run bench)`);
  return v;
};
const TS = need('BENCH_TS');
const RUN_DIR = need('BENCH_RUN_DIR');
const PID_FILE = join(RUN_DIR, 'pids');
const TASK_QUEUE = `bench-${TS}`;
const API_PORT = Number(need('BENCH_API_PORT'));
const MODEL_PORTS = { 0: Number(need('BENCH_MODEL_PORT_0')), 200: Number(need('BENCH_MODEL_PORT_200')) };
const MODEL_KEY = need('BENCH_MODEL_KEY');
const API = `http://127.0.0.1:${API_PORT}`;
const MODEL = { 0: `http://127.0.0.1:${MODEL_PORTS[0]}/v1`, 200: `http://127.0.0.1:${MODEL_PORTS[200]}/v1` };
const PROFILE_DIR = join(RUN_DIR, 'profiles');
/** The worker's /metrics, read for its heap figures next to its RSS. */
const [WORKER_METRICS_PORT] = await freePorts(1);
const RESULTS_DIR = join(ROOT, 'bench/results');

const MESSAGE = 'Say something short.';
/** The stack's Temporal settings beyond the dev server's defaults (scripts/stack.sh starts it so). */
const STACK_TEMPORAL = {
  dynamicConfig: [
    'system.enableActivityEagerExecution=true',
    'history.transferProcessorMaxPollRPS=1000',
    'matching.maxDeployments=100000',
  ],
  pragmas: ['journal_mode=WAL', 'synchronous=NORMAL'],
};
/** Server settings compared on private Temporal dev servers (full runs): the stack's, and one
 * change from them each. */
const TEMPORAL_VARIANTS = [
  { name: 'private', label: 'private Temporal dev server, as the stack runs it', ...STACK_TEMPORAL },
  {
    name: 'defaults',
    label:
      "private Temporal, the dev server's defaults (no WAL, no eager activities, 20 transfer-queue reads a second)",
    dynamicConfig: [],
  },
  // Task dispatch was 3 ms in some runs and 25 ms in others (docs/performance.md, session 4): a
  // task on one of the 4 default partitions with no poll waiting there is forwarded to the root.
  {
    name: 'one-partition',
    label: 'private Temporal as the stack runs it, task queues of one partition',
    dynamicConfig: [
      ...STACK_TEMPORAL.dynamicConfig,
      'matching.numTaskqueueReadPartitions=1',
      'matching.numTaskqueueWritePartitions=1',
    ],
    pragmas: STACK_TEMPORAL.pragmas,
  },
];
const TOOL = {
  name: 'lookup',
  description: 'Looks a word up in the caller’s own dictionary.',
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};
const REQUEST_TIMEOUT_MS = 30_000;

const t0 = now();
const log = (s) => process.stderr.write(`[bench +${((now() - t0) / 1000).toFixed(1)}s] ${s}\n`);

/** Everything to stop and close on the way out, in reverse order of opening. */
const cleanups = [];
let cleaningUp;
function cleanup() {
  cleaningUp ??= (async () => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (e) {
        log(`cleanup: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  })();
  return cleaningUp;
}
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    log(`${signal}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}

// ---------------------------------------------------------------------------------------------
// Processes

async function startModelServers() {
  const servers = {};
  for (const latency of [0, 200]) {
    servers[latency] = startNode({
      name: `model-${latency}ms`,
      args: [
        join(ROOT, 'scripts/bench/model-server.mjs'),
        '--latency-ms',
        String(latency),
        '--port',
        String(MODEL_PORTS[latency]),
      ],
      env: { ...env, BENCH_MODEL_KEY: MODEL_KEY },
      logFile: join(RUN_DIR, `model-${latency}ms.log`),
      pidFile: PID_FILE,
    });
  }
  cleanups.push(() => stopAll(Object.values(servers), 3000));
  for (const latency of [0, 200]) {
    await waitFor(
      `the ${latency} ms model server`,
      10_000,
      async () =>
        (await send({ method: 'GET', url: `http://127.0.0.1:${MODEL_PORTS[latency]}/healthz`, timeoutMs: 1000 }))
          .status === 200,
      servers[latency],
    );
  }
  return servers;
}

/**
 * Starts apps from dist/ with the profiler preload, on their own port and task queue (the
 * quota of the pro plan raised so that no benchmark request meets it), and waits until the api
 * answers /readyz, the worker polls and the relay and the projector run. Returns the processes and a `stop`.
 */
async function startApps({
  names = ['api', 'worker', 'relay', 'projector'],
  port = API_PORT,
  taskQueue = TASK_QUEUE,
  temporalAddress = env.TEMPORAL_ADDRESS,
  tag = '',
} = {}) {
  const plans = JSON.stringify({ pro: { monthlyQuota: 1_000_000_000, capabilities: CAPABILITIES } });
  const base = `http://127.0.0.1:${port}`;
  const apps = {};
  for (const app of names) {
    apps[app] = startNode({
      name: `${app}${tag}`,
      args: appProcess(app, { preload: [join(ROOT, 'scripts/bench/profiler-preload.mjs')] }).args,
      env: {
        ...env,
        ...appProcess(app).env,
        PORT: String(port),
        PUBLIC_BASE_URL: base,
        TEMPORAL_ADDRESS: temporalAddress,
        TEMPORAL_TASK_QUEUE: taskQueue,
        MAS_PLANS: plans,
        BENCH_PROFILE_DIR: PROFILE_DIR,
        BENCH_PROFILE_NAME: `${app}${tag}`,
        ...(app === 'worker' && !tag ? { WORKER_METRICS_PORT: String(WORKER_METRICS_PORT) } : {}),
      },
      logFile: join(RUN_DIR, `${app}${tag}.log`),
      pidFile: PID_FILE,
    });
  }
  const stop = () => stopAll(Object.values(apps));
  cleanups.push(stop);
  const spawnedAt = now();
  const logHas = (proc, text) => () => existsSync(proc.logFile) && readFileSync(proc.logFile, 'utf8').includes(text);
  // The three start side by side; each wait ends when its app is ready, in parallel.
  const ready = async (name, what, timeoutMs, check) => {
    await waitFor(what, timeoutMs, check, apps[name]);
    return [name, (now() - spawnedAt) / 1000];
  };
  const startupS = Object.fromEntries(
    await Promise.all([
      ...(apps.api
        ? [
            ready(
              'api',
              `the api${tag} to answer /readyz`,
              120_000,
              async () => (await send({ method: 'GET', url: `${base}/readyz`, timeoutMs: 3000 })).status === 200,
            ),
          ]
        : []),
      ...(apps.worker
        ? [ready('worker', `the worker${tag} to poll ${taskQueue}`, 120_000, logHas(apps.worker, 'polling task queue'))]
        : []),
      ...(apps.relay ? [ready('relay', 'the relay to run', 60_000, logHas(apps.relay, 'relaying'))] : []),
      ...(apps.projector
        ? [ready('projector', 'the projector to run', 60_000, logHas(apps.projector, 'running'))]
        : []),
    ]),
  );
  // The worker bundles the workflow code with webpack at start; the SDK logs how long it took.
  const bundle =
    apps.worker && existsSync(apps.worker.logFile)
      ? /compiled successfully in (\d+) ms/.exec(readFileSync(apps.worker.logFile, 'utf8'))
      : null;
  if (bundle) startupS.workerBundle = Number(bundle[1]) / 1000;
  return { apps, stop, base, startupS };
}

// ---------------------------------------------------------------------------------------------
// Requests

const agents = [];
function agentFor(clients) {
  const agent = keepAliveAgent(clients);
  agents.push(agent);
  return agent;
}
cleanups.push(() => agents.forEach((a) => a.destroy()));

const modelCall = (agent, latency, body) =>
  send({
    agent,
    url: `${MODEL[latency]}/chat/completions`,
    headers: { authorization: `Bearer ${MODEL_KEY}` },
    body: { model: 'bench', ...body },
    timeoutMs: REQUEST_TIMEOUT_MS,
  });

const apiCall = (agent, key, path, body, extra = {}, base = API) =>
  send({
    agent,
    url: `${base}${path}`,
    headers: { authorization: `Bearer ${key}` },
    body,
    timeoutMs: REQUEST_TIMEOUT_MS,
    ...extra,
  });

/** "status code" of a failed response, for the error tally. */
function failureOf(r) {
  if (r.status === 0) return `network: ${r.error}`;
  return `${r.status} ${jsonOf(r)?.error?.code ?? ''}`.trim();
}

/** Failed requests by status and code; requests cut off at the end of a window are not failures. */
function tally(results) {
  const errors = {};
  for (const r of results) if (!ok(r.status) && !r.aborted) errors[failureOf(r)] = (errors[failureOf(r)] ?? 0) + 1;
  return errors;
}

/** Pids of the processes this run started (for telling other work on the machine apart). */
let ownPids = new Set();
/** The stack's Temporal server's Prometheus endpoint, when it can be found. */
let temporalMetricsUrl;

/** Runs a scenario and notes how much of the machine other processes used meanwhile. */
async function watched(fn) {
  const before = machineSnapshot();
  const result = await fn();
  return { ...result, others: otherLoad(before, machineSnapshot(), ownPids) };
}

/** CPU ms per second of each component with no requests: their background work, subtracted
 * from per-request figures. */
async function idleCpuRates(components, ms) {
  const a = cpuSnapshot(components);
  await sleep(ms);
  const b = cpuSnapshot(components);
  // A postgres backend that exits between the snapshots takes its CPU time with it: clamp at 0.
  return Object.fromEntries(Object.entries(delta(a, b)).map(([k, v]) => [k, Math.max(0, (v / ms) * 1000)]));
}

const count = (errors) => Object.values(errors).reduce((a, b) => a + b, 0);

/** The stack's servers whose leftover work would run into the next measurement. */
const SETTLING = ['temporal', 'postgres', 'kafka'];

/**
 * Waits, at most PLAN.settleMaxMs, until the stack's Temporal, PostgreSQL and Kafka are back
 * within 20 ms/s of their idle CPU, so that no latency scenario runs beside the bookkeeping the
 * previous load phase left (the visibility records and task acknowledgements of a thousand
 * workflows). Returns the wait in ms (about 1 s after the floor's 8 clients, docs/performance.md).
 */
async function settle(components, idleCpu) {
  const started = now();
  while (now() - started < PLAN.settleMaxMs) {
    const rates = await idleCpuRates(components, 500);
    if (SETTLING.every((k) => (rates[k] ?? 0) <= (idleCpu[k] ?? 0) + 20)) break;
  }
  return now() - started;
}

// ---------------------------------------------------------------------------------------------
// Scenarios

async function warmUp(pools) {
  const agent = agentFor(4);
  const r = await closedLoop({
    clients: 4,
    maxRequests: PLAN.warmup,
    maxMs: PLAN.warmupMs,
    fn: async (i) => apiCall(agent, (await pools[i % 5 === 0 ? 200 : 0].take()).key, '/v1/agent', { message: MESSAGE }),
  });
  const good = r.results.filter((x) => ok(x.status)).length;
  if (good === 0) {
    const first = r.results[0];
    throw new Error(
      `warm-up: none of ${r.results.length} requests succeeded (first: ${first ? failureOf(first) : 'none'} ${first?.body?.slice(0, 300) ?? ''})`,
    );
  }
  log(`warm-up: ${good}/${r.results.length} ok`);
}

async function overheadScenario(pools, spec) {
  const { latency, clients, n, maxMs } = spec;
  const baseAgent = agentFor(clients);
  const base = await closedLoop({
    clients,
    maxRequests: n,
    maxMs,
    fn: () => modelCall(baseAgent, latency, { messages: [{ role: 'user', content: MESSAGE }] }),
  });
  const agent = agentFor(clients);
  const metricsBefore = temporalMetricsUrl ? await scrape(temporalMetricsUrl).catch(() => undefined) : undefined;
  const run = await closedLoop({
    clients,
    maxRequests: n,
    maxMs,
    fn: async () => apiCall(agent, (await pools[latency].take()).key, '/v1/agent', { message: MESSAGE }),
  });
  const metricsAfter = temporalMetricsUrl ? await scrape(temporalMetricsUrl).catch(() => undefined) : undefined;
  const good = run.results.filter((r) => ok(r.status) && jsonOf(r)?.status === 'completed');
  const api = summary(good.map((r) => r.ms));
  const baseline = summary(base.results.filter((r) => ok(r.status)).map((r) => r.ms));
  const errors = tally(run.results);
  const notCompleted = run.results.filter((r) => ok(r.status)).length - good.length;
  if (notCompleted) errors['200 but not completed'] = notCompleted;
  log(
    `overhead ${latency} ms x${clients}: api p50 ${fmt(api.p50)} ms, baseline p50 ${fmt(baseline.p50)} ms, ${count(errors)} errors`,
  );
  return {
    ...spec,
    api,
    baseline,
    overhead: difference(api, baseline),
    errors,
    baselineErrors: tally(base.results),
    temporalPerRequest:
      metricsBefore && metricsAfter && good.length
        ? temporalPerRequest(metricsBefore, metricsAfter, good.length)
        : undefined,
    samples: good.map((r) => ({ id: jsonOf(r).id, sentAt: r.startedAt, receivedAt: r.endedAt })),
  };
}

async function toolRoundScenario(pools) {
  const n = PLAN.toolRounds;
  const baseAgent = agentFor(1);
  const user = { role: 'user', content: MESSAGE };
  const tools = [{ type: 'function', function: TOOL }];
  const baseLegs = { leg1: [], leg2: [] };
  await closedLoop({
    clients: 1,
    maxRequests: n,
    maxMs: PLAN.toolMs,
    fn: async () => {
      const a = await modelCall(baseAgent, 0, { messages: [user], tools });
      const call = jsonOf(a)?.choices?.[0]?.message?.tool_calls?.[0];
      if (!ok(a.status) || !call) return;
      const b = await modelCall(baseAgent, 0, {
        messages: [
          user,
          { role: 'assistant', content: null, tool_calls: [call] },
          { role: 'tool', tool_call_id: call.id, content: '{"answer":42}' },
        ],
        tools,
      });
      if (!ok(b.status)) return;
      baseLegs.leg1.push(a.ms);
      baseLegs.leg2.push(b.ms);
    },
  });
  const agent = agentFor(1);
  const legs = { leg1: [], leg2: [] };
  const failures = [];
  await closedLoop({
    clients: 1,
    maxRequests: n,
    maxMs: PLAN.toolMs,
    fn: async () => {
      const { key } = await pools[0].take(2);
      const a = await apiCall(agent, key, '/v1/agent', { message: MESSAGE, tools: [TOOL] });
      const first = jsonOf(a);
      if (!ok(a.status) || first?.status !== 'requires_tool_outputs') {
        failures.push(`leg 1: ${ok(a.status) ? `status ${first?.status}` : failureOf(a)}`);
        return;
      }
      const outputs = (first.tool_calls ?? []).map((c) => ({ tool_call_id: c.id, output: '{"answer":42}' }));
      const b = await apiCall(agent, key, `/v1/agent/${first.id}/tool-outputs`, {
        tool_outputs: outputs,
        _compute_instance: first._compute_instance,
      });
      if (!ok(b.status) || jsonOf(b)?.status !== 'completed') {
        failures.push(`leg 2: ${ok(b.status) ? `status ${jsonOf(b)?.status}` : failureOf(b)}`);
        return;
      }
      legs.leg1.push(a.ms);
      legs.leg2.push(b.ms);
    },
  });
  const errors = {};
  for (const f of failures) errors[f] = (errors[f] ?? 0) + 1;
  const out = {};
  for (const leg of ['leg1', 'leg2']) {
    const api = summary(legs[leg]);
    const baseline = summary(baseLegs[leg]);
    out[leg] = { api, baseline, overhead: difference(api, baseline) };
  }
  log(
    `tool round: leg 1 p50 ${fmt(out.leg1.api.p50)} ms, leg 2 p50 ${fmt(out.leg2.api.p50)} ms, ${failures.length} failed rounds`,
  );
  return { rounds: n, ...out, errors };
}

const apiToken = (e) => e.event === 'token' || e.json?.type === 'token';
const modelToken = (e) =>
  typeof e.json?.choices?.[0]?.delta?.content === 'string' && e.json.choices[0].delta.content !== '';

async function streamingScenario(pools) {
  const agent = agentFor(1);
  const probe = await apiCall(
    agent,
    (await pools[0].take()).key,
    '/v1/agent',
    { message: MESSAGE, stream: true },
    { sse: { isToken: apiToken } },
  );
  const type = String(probe.headers['content-type'] ?? '');
  if (!ok(probe.status)) {
    const code = jsonOf(probe)?.error?.code;
    return {
      available: false,
      reason:
        code === 'stream_not_supported'
          ? 'the api answers 400 stream_not_supported'
          : `the api answers ${failureOf(probe)} to stream: true`,
    };
  }
  if (!type.includes('text/event-stream'))
    return {
      available: false,
      reason: `the api answers ${type || 'no content type'}, not an event stream, to stream: true`,
    };
  if (probe.firstTokenMs === undefined) return { available: false, reason: 'the api streams but sent no token event' };
  const rows = [];
  for (const latency of [0, 200]) {
    const n = PLAN.streaming[latency];
    const baseAgent = agentFor(1);
    const baseStreamed = await closedLoop({
      clients: 1,
      maxRequests: n,
      maxMs: PLAN.toolMs,
      fn: () =>
        send({
          agent: baseAgent,
          url: `${MODEL[latency]}/chat/completions`,
          headers: { authorization: `Bearer ${MODEL_KEY}` },
          body: {
            model: 'bench',
            messages: [{ role: 'user', content: MESSAGE }],
            stream: true,
            stream_options: { include_usage: true },
          },
          sse: { isToken: modelToken },
          timeoutMs: REQUEST_TIMEOUT_MS,
        }),
    });
    const run = await closedLoop({
      clients: 1,
      maxRequests: n,
      maxMs: PLAN.toolMs,
      fn: async () =>
        apiCall(
          agent,
          (await pools[latency].take()).key,
          '/v1/agent',
          { message: MESSAGE, stream: true },
          { sse: { isToken: apiToken } },
        ),
    });
    const api = summary(
      run.results.filter((r) => ok(r.status) && r.firstTokenMs !== undefined).map((r) => r.firstTokenMs),
    );
    const baseline = summary(
      baseStreamed.results.filter((r) => ok(r.status) && r.firstTokenMs !== undefined).map((r) => r.firstTokenMs),
    );
    const errors = tally(run.results);
    const noToken = run.results.filter((r) => ok(r.status) && r.firstTokenMs === undefined).length;
    if (noToken) errors['200 without a token event'] = noToken;
    rows.push({ latency, clients: 1, api, baseline, overhead: difference(api, baseline), errors });
    log(`streaming ${latency} ms: first token p50 ${fmt(api.p50)} ms vs model ${fmt(baseline.p50)} ms`);
  }
  return { available: true, rows };
}

async function usageLagScenario(pools, watcher, db) {
  const result = { kafka: undefined, projection: undefined };
  const table = await projectionTable(db);
  const poller = table ? projectionPoller(db) : undefined;
  const groupsBefore = watcher.error ? undefined : await watcher.projectorGroups();
  const agent = agentFor(1);
  const responses = [];
  const run = await closedLoop({
    clients: 1,
    maxRequests: PLAN.usage,
    maxMs: PLAN.usageMs,
    fn: async () => {
      const r = await apiCall(agent, (await pools[0].take()).key, '/v1/agent', { message: MESSAGE });
      const id = jsonOf(r)?.id;
      if (ok(r.status) && id) {
        responses.push({ id, at: r.endedAt });
        poller?.expect(id);
      }
      await sleep(100);
      return r;
    },
  });
  const waitMs = PLAN.usageWaitMs;
  const deadline = now() + waitMs;
  const kafkaDone = () => watcher.error || responses.every((x) => watcher.seen.has(x.id));
  const rowsDone = () => !poller || poller.failure || poller.pending === 0;
  while (now() < deadline && !(kafkaDone() && rowsDone())) await sleep(50);
  await poller?.stop();

  const lags = (seen) => responses.filter((x) => seen.has(x.id)).map((x) => seen.get(x.id) - x.at);
  if (watcher.error) {
    result.kafka = { available: false, reason: `no consumer on mas.usage.v1: ${watcher.error}` };
  } else {
    const l = lags(watcher.seen);
    result.kafka =
      l.length === 0
        ? {
            available: false,
            reason: `no usage event for this run's requests on mas.usage.v1 within ${waitMs / 1000} s (${watcher.messages} messages on the topic)`,
          }
        : { available: true, lag: summary(l), missing: responses.length - l.length };
  }
  if (!table) {
    result.projection = { available: false, reason: 'no usage projection table (request_log) in the database' };
  } else if (poller.failure) {
    result.projection = { available: false, reason: `polling request_log failed: ${poller.failure}` };
  } else {
    const l = lags(poller.seen);
    result.projection =
      l.length === 0
        ? {
            available: false,
            reason: `request_log exists, but no row for this run's requests within ${waitMs / 1000} s`,
          }
        : { available: true, lag: summary(l), missing: responses.length - l.length, resolutionMs: 25 };
  }
  result.requests = responses.length;
  result.errors = tally(run.results);
  const groupsAfter = watcher.error ? undefined : await watcher.projectorGroups();
  result.projectorGroupMembers = Object.fromEntries(
    Object.keys({ ...groupsBefore, ...groupsAfter }).map((g) => [
      g,
      Math.max(groupsBefore?.[g] ?? 0, groupsAfter?.[g] ?? 0),
    ]),
  );
  const shared = Object.entries(result.projectorGroupMembers).filter(([, n]) => n > 1);
  if (shared.length) result.projection.sharedGroups = shared.map(([g, n]) => `${g} had ${n} members`).join(', ');
  log(
    `usage lag: kafka ${result.kafka.available ? `p50 ${fmt(result.kafka.lag.p50)} ms` : 'not available'}, projection ${result.projection.available ? `p50 ${fmt(result.projection.lag.p50)} ms` : 'not available'}`,
  );
  return result;
}

async function floorsScenario(pools) {
  const agent = agentFor(1);
  const health = await closedLoop({
    clients: 1,
    maxRequests: PLAN.floors,
    maxMs: PLAN.floorMs,
    fn: () => send({ agent, method: 'GET', url: `${API}/healthz`, timeoutMs: 5000 }),
  });
  const files = await closedLoop({
    clients: 1,
    maxRequests: PLAN.floors,
    maxMs: PLAN.floorMs,
    fn: async () =>
      send({
        agent,
        method: 'GET',
        url: `${API}/v1/files/${randomUUID()}`,
        headers: { authorization: `Bearer ${(await pools[0].take()).key}` },
        timeoutMs: 5000,
      }),
  });
  const expected404 = files.results.filter((r) => r.status === 404);
  return {
    healthz: {
      latency: summary(health.results.filter((r) => ok(r.status)).map((r) => r.ms)),
      errors: tally(health.results),
    },
    authFloor: {
      latency: summary(expected404.map((r) => r.ms)),
      errors: Object.fromEntries(Object.entries(tally(files.results)).filter(([k]) => !k.startsWith('404'))),
    },
  };
}

/**
 * The Temporal floor (issue 16): the smallest request a Temporal-per-request service can make, an
 * Update-with-Start answered by a workflow that runs one local activity and returns, on its own
 * worker process and task queue of the same Temporal server. Every service row is also shown as a
 * ratio to it.
 */
async function startFloor() {
  const taskQueue = `bench-floor-${TS}`;
  const proc = startNode({
    name: 'floor-worker',
    args: [join(ROOT, 'scripts/bench/floor/worker.mjs')],
    env: { ...env, FLOOR_TASK_QUEUE: taskQueue },
    logFile: join(RUN_DIR, 'floor-worker.log'),
    pidFile: PID_FILE,
  });
  cleanups.push(() => stopAll([proc]));
  await waitFor(
    'the floor worker to poll',
    60_000,
    () => existsSync(proc.logFile) && readFileSync(proc.logFile, 'utf8').includes('polling'),
    proc,
  );
  const client = await openFloorClient({
    address: need('TEMPORAL_ADDRESS'),
    namespace: env.TEMPORAL_NAMESPACE || 'default',
    taskQueue,
  });
  cleanups.push(() => client.close());
  return { proc, client };
}

/** The floor at 1 and 8 clients: latency, and at 8 the rate and CPU per request over the same components. */
async function floorScenario(floor, components, idleCpu) {
  const spec = PLAN.overhead.find((o) => o.latency === 0 && o.clients === 1);
  await closedLoop({ clients: 4, maxRequests: 40, maxMs: 3_000, fn: () => floor.client.call() });
  const c1 = await closedLoop({ clients: 1, maxRequests: spec.n, maxMs: spec.maxMs, fn: () => floor.client.call() });
  const ms = PLAN.levelMs;
  const warmMs = Math.min(3000, ms / 4);
  let cpuStart;
  let cpuEnd;
  const startTimer = setTimeout(() => (cpuStart = cpuSnapshot(components)), warmMs);
  const endTimer = setTimeout(() => (cpuEnd = cpuSnapshot(components)), ms);
  const windowStart = now() + warmMs;
  const windowEnd = now() + ms;
  const c8 = await closedLoop({ clients: 8, maxRequests: 200_000, maxMs: ms, fn: () => floor.client.call() });
  clearTimeout(startTimer);
  clearTimeout(endTimer);
  const completed = c8.results.filter((r) => ok(r.status) && r.endedAt >= windowStart && r.endedAt <= windowEnd);
  const seconds = (windowEnd - windowStart) / 1000;
  const cpuDelta = cpuStart && cpuEnd ? delta(cpuStart, cpuEnd) : undefined;
  const keep = new Set(['temporal', 'floorWorker', 'harness', 'postgres', 'kafka']);
  const cpu =
    cpuDelta && completed.length
      ? Object.fromEntries(
          Object.entries(cpuDelta)
            .filter(([k]) => keep.has(k))
            .map(([k, v]) => [k, Math.max(0, v - (idleCpu?.[k] ?? 0) * seconds) / completed.length]),
        )
      : undefined;
  const result = {
    c1: { latency: summary(c1.results.filter((r) => ok(r.status)).map((r) => r.ms)), errors: tally(c1.results) },
    c8: {
      latency: summary(completed.map((r) => r.ms)),
      rps: completed.length / seconds,
      errors: tally(c8.results),
      cpuMsPerRequest: cpu,
    },
  };
  log(
    `floor: x1 p50 ${fmt(result.c1.latency.p50)} ms p99 ${fmt(result.c1.latency.p99)} ms; x8 ${fmt(result.c8.rps)} req/s p50 ${fmt(result.c8.latency.p50)} ms`,
  );
  return result;
}

/** pg_stat_database counters and the WAL position, to count database work per request. */
async function pgCounters(db) {
  const { rows } = await db.query(
    `select xact_commit::bigint as commits, (tup_inserted + tup_updated + tup_deleted)::bigint as writes, tup_fetched::bigint as fetched,
            pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint as wal
       from pg_stat_database where datname = current_database()`,
  );
  const r = rows[0] ?? {};
  return { commits: Number(r.commits), writes: Number(r.writes), fetched: Number(r.fetched), walBytes: Number(r.wal) };
}

/** Active connections to the database, sampled; returns the maximum seen by state. */
function pgActivitySampler(db, everyMs = 500) {
  const max = { total: 0, active: 0, lockWaits: 0 };
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        const { rows } = await db.query(
          `select count(*)::int as total, count(*) filter (where state = 'active')::int as active,
                  count(*) filter (where wait_event_type = 'Lock')::int as lock_waits
             from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`,
        );
        max.total = Math.max(max.total, rows[0].total);
        max.active = Math.max(max.active, rows[0].active);
        max.lockWaits = Math.max(max.lockWaits, rows[0].lock_waits);
      } catch {
        return;
      }
      await sleep(everyMs);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return max;
    },
  };
}

/**
 * Runs a closed loop at `clients` for `ms`, and measures a window that skips the first
 * `warmMs`: completed requests per second, latency, CPU per request by component, database work
 * per request, peak RSS and database connections.
 */
async function measuredLoad({ clients, ms, warmMs, fn, apps, components, idleCpu, db, metricsUrl, threads = [] }) {
  const rss = rssSampler({ api: apps.api.pid, worker: apps.worker.pid, projector: apps.projector.pid });
  const pgActivity = pgActivitySampler(db);
  let cpuStart;
  let cpuEnd;
  let threadsStart;
  let threadsEnd;
  let pgStart;
  let pgEnd;
  let machineStart;
  let machineEnd;
  let temporalStart;
  let temporalEnd;
  const windowStart = now() + warmMs;
  const windowEnd = now() + ms;
  const startTimer = setTimeout(() => {
    cpuStart = cpuSnapshot(components);
    machineStart = machineSnapshot();
    threadsStart = Object.fromEntries(threads.map((t) => [t, threadCpu(apps[t].pid)]));
    pgStart = pgCounters(db).catch(() => undefined);
    temporalStart = metricsUrl ? scrape(metricsUrl).catch(() => undefined) : undefined;
  }, warmMs);
  const endTimer = setTimeout(() => {
    cpuEnd = cpuSnapshot(components);
    machineEnd = machineSnapshot();
    threadsEnd = Object.fromEntries(threads.map((t) => [t, threadCpu(apps[t].pid)]));
    pgEnd = pgCounters(db).catch(() => undefined);
    temporalEnd = metricsUrl ? scrape(metricsUrl).catch(() => undefined) : undefined;
  }, ms);
  const run = await closedLoop({
    clients,
    maxRequests: Math.ceil((ms / 1000) * 2000),
    maxMs: ms,
    fn,
    abortAtDeadline: true,
  });
  clearTimeout(startTimer);
  clearTimeout(endTimer);
  const peakRss = rss.stop();
  const peakConnections = await pgActivity.stop();
  const inWindow = run.results.filter((r) => r.endedAt >= windowStart && r.endedAt <= windowEnd);
  const completed = inWindow.filter((r) => ok(r.status));
  const seconds = (windowEnd - windowStart) / 1000;
  const perRequest = (x) => (completed.length ? x / completed.length : undefined);
  const cpuDelta = cpuStart && cpuEnd ? delta(cpuStart, cpuEnd) : undefined;
  const cpuRaw = cpuDelta && Object.fromEntries(Object.entries(cpuDelta).map(([k, v]) => [k, perRequest(v)]));
  // Net of each component's idle work over the window (never below 0).
  const cpu =
    cpuDelta &&
    Object.fromEntries(
      Object.entries(cpuDelta).map(([k, v]) => [k, perRequest(Math.max(0, v - (idleCpu?.[k] ?? 0) * seconds))]),
    );
  const threadCpuPerRequest =
    threadsStart && threadsEnd
      ? Object.fromEntries(
          threads.map((t) => [
            t,
            Object.fromEntries(
              Object.entries(delta(threadsStart[t], threadsEnd[t]))
                .filter(([, v]) => v > 0)
                .map(([k, v]) => [k, perRequest(v)]),
            ),
          ]),
        )
      : undefined;
  const [pa, pb] = [await pgStart, await pgEnd];
  const database =
    pa && pb ? Object.fromEntries(Object.entries(delta(pa, pb)).map(([k, v]) => [k, perRequest(v)])) : undefined;
  const [ta, tb] = [await temporalStart, await temporalEnd];
  const temporal = ta && tb && completed.length ? temporalPerRequest(ta, tb, completed.length) : undefined;
  return {
    clients,
    requests: run.results.length,
    rps: completed.length / seconds,
    latency: summary(completed.map((r) => r.ms)),
    errors: tally(run.results),
    errorRate: run.results.length ? count(tally(run.results)) / run.results.length : 0,
    cpuMsPerRequest: cpu,
    cpuMsPerRequestRaw: cpuRaw,
    threadCpuMsPerRequest: threadCpuPerRequest,
    databasePerRequest: database,
    temporalPerRequest: temporal,
    peakRssMb: peakRss,
    peakConnections,
    machine: machineStart && machineEnd ? otherLoad(machineStart, machineEnd, ownPids) : undefined,
    results: run.results,
  };
}

async function throughputScenario(pools, apps, components, idleCpu, db) {
  const levels = [];
  let best = 0;
  let turned;
  for (const clients of PLAN.levels) {
    const baseAgent = agentFor(clients);
    const base = await closedLoop({
      clients,
      maxRequests: 200_000,
      maxMs: PLAN.baselineLevelMs,
      fn: () => modelCall(baseAgent, 0, { messages: [{ role: 'user', content: MESSAGE }] }),
    });
    const baseRps = base.results.filter((r) => ok(r.status)).length / ((base.endedAt - base.startedAt) / 1000);
    const agent = agentFor(clients);
    const level = await measuredLoad({
      clients,
      ms: PLAN.levelMs,
      warmMs: Math.min(3000, PLAN.levelMs / 4),
      fn: async (_, signal) =>
        apiCall(agent, (await pools[0].take()).key, '/v1/agent', { message: MESSAGE }, { signal }),
      apps,
      components,
      idleCpu,
      db,
      metricsUrl: temporalMetricsUrl,
    });
    const { results, ...kept } = level;
    levels.push({
      ...kept,
      baselineRps: baseRps,
      responses: results.filter((r) => ok(r.status)).map((r) => ({ id: jsonOf(r)?.id, at: r.endedAt })),
    });
    log(
      `throughput x${clients}: ${fmt(level.rps)} req/s, p50 ${fmt(level.latency.p50)} ms, p99 ${fmt(level.latency.p99)} ms, ${count(level.errors)} errors (baseline ${fmt(baseRps)} req/s)`,
    );
    await sleep(PLAN.settleMs);
    // The ramp goes on past saturation (issue 16: overload must degrade cleanly, which the errors
    // column of the higher levels shows); the first level past it is noted.
    if (!turned && level.errorRate > 0.01)
      turned = { clients, why: `errors: ${(level.errorRate * 100).toFixed(1)}% of requests` };
    if (!turned && best > 0 && level.rps < 0.9 * best)
      turned = { clients, why: `throughput fell to ${fmt(level.rps)} from ${fmt(best)} req/s` };
    best = Math.max(best, level.rps);
  }
  return { levels, turned };
}

async function profileScenario(pools, apps, components, idleCpu, db) {
  mkdirSync(PROFILE_DIR, { recursive: true });
  const agent = agentFor(8);
  const roles = ['api', 'worker'];
  for (const role of roles) process.kill(apps[role].pid, 'SIGWINCH');
  const load = await measuredLoad({
    clients: 8,
    ms: PLAN.profileMs,
    warmMs: 1000,
    fn: async (_, signal) => apiCall(agent, (await pools[0].take()).key, '/v1/agent', { message: MESSAGE }, { signal }),
    apps,
    components,
    idleCpu,
    db,
    metricsUrl: temporalMetricsUrl,
    threads: roles,
  });
  for (const role of roles) process.kill(apps[role].pid, 'SIGWINCH');
  const profiles = {};
  for (const role of roles) {
    const file = join(PROFILE_DIR, `${role}.cpuprofile`);
    try {
      await waitFor(`the ${role} profile`, 15_000, () => existsSync(file));
      await sleep(300);
      profiles[role] = { file, ...summariseProfile(file) };
    } catch (e) {
      profiles[role] = { error: e instanceof Error ? e.message.split('\n')[0] : String(e) };
    }
  }
  const { results, ...kept } = load;
  log(
    `profile: ${fmt(load.rps)} req/s under the profiler; api busy ${fmt(profiles.api?.busyMs)} ms, worker busy ${fmt(profiles.worker?.busyMs)} ms`,
  );
  return { load: kept, profiles, requests: results.length };
}

/**
 * An A/B of a Temporal server setting, without touching the service: a private dev server (same
 * version and flags as the stack's, its own SQLite file, this run's search attributes) with
 * `dynamicConfig` added, its own api and worker, the same requests. Variants run one after the
 * other on an otherwise idle private server, so they compare with each other cleanly.
 */
async function temporalVariantScenario(pools, variant, searchAttributes) {
  const started = now();
  const [grpcPort, httpPort, metricsPort, apiPort] = await freePorts(4);
  const address = `127.0.0.1:${grpcPort}`;
  const server = startProcess({
    name: `temporal-${variant.name}`,
    command: need('BENCH_TEMPORAL_BIN'),
    args: [
      'server',
      'start-dev',
      '--headless',
      '--ip',
      '127.0.0.1',
      '--port',
      String(grpcPort),
      '--http-port',
      String(httpPort),
      '--metrics-port',
      String(metricsPort),
      ...(variant.inMemory ? [] : ['--db-filename', join(RUN_DIR, `temporal-${variant.name}.db`)]),
      ...(variant.pragmas ?? []).flatMap((p) => ['--sqlite-pragma', p]),
      '--namespace',
      env.TEMPORAL_NAMESPACE || 'default',
      '--log-level',
      'warn',
      ...searchAttributes.flatMap((a) => ['--search-attribute', a]),
      '--dynamic-config-value',
      'frontend.enableUpdateWorkflowExecution=true',
      '--dynamic-config-value',
      'frontend.enableExecuteMultiOperation=true',
      ...variant.dynamicConfig.flatMap((c) => ['--dynamic-config-value', c]),
    ],
    env,
    logFile: join(RUN_DIR, `temporal-${variant.name}.log`),
    pidFile: PID_FILE,
  });
  const stopServer = () => stopAll([server], 5000);
  cleanups.push(stopServer);
  const temporal = await waitForTemporal({ address, namespace: env.TEMPORAL_NAMESPACE || 'default' });
  const tag = `-${variant.name}`;
  const { apps, stop } = await startApps({
    names: ['api', 'worker'],
    port: apiPort,
    taskQueue: `${TASK_QUEUE}${tag}`,
    temporalAddress: address,
    tag,
  });
  for (const p of Object.values(apps)) ownPids.add(p.pid);
  ownPids.add(server.pid);
  const base = `http://127.0.0.1:${apiPort}`;
  // This variant's own processes only: its Temporal server, api and worker (by pid).
  const variantComponents = () =>
    new Map([
      ['temporal', [server.pid]],
      ['api', [apps.api.pid]],
      ['worker', [apps.worker.pid]],
    ]);
  const call = async (agent, signal) =>
    apiCall(agent, (await pools[0].take()).key, '/v1/agent', { message: MESSAGE }, { signal }, base);
  try {
    const warm = agentFor(2);
    await closedLoop({ clients: 2, maxRequests: 20, maxMs: 10_000, fn: () => call(warm) });
    const out = { name: variant.name, label: variant.label, dynamicConfig: variant.dynamicConfig };
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    for (const clients of [1, 8]) {
      const agent = agentFor(clients);
      const before = await scrape(metricsUrl).catch(() => undefined);
      const machineA = machineSnapshot();
      const cpuA = cpuSnapshot(variantComponents);
      const run = await closedLoop({
        clients,
        maxRequests: 2000,
        maxMs: PLAN.experimentMs,
        fn: (_, signal) => call(agent, signal),
        abortAtDeadline: true,
      });
      const after = await scrape(metricsUrl).catch(() => undefined);
      const cpuB = cpuSnapshot(variantComponents);
      const good = run.results.filter((r) => ok(r.status) && jsonOf(r)?.status === 'completed');
      out[`c${clients}`] = {
        clients,
        latency: summary(good.map((r) => r.ms)),
        rps: good.length / ((run.endedAt - run.startedAt) / 1000),
        errors: tally(run.results),
        temporalPerRequest: before && after && good.length ? temporalPerRequest(before, after, good.length) : undefined,
        cpuMsPerRequest: good.length
          ? Object.fromEntries(Object.entries(delta(cpuA, cpuB)).map(([k, v]) => [k, v / good.length]))
          : undefined,
        others: otherLoad(machineA, machineSnapshot(), ownPids),
      };
      if (clients === 1) {
        const samples = good
          .map((r) => ({ id: jsonOf(r).id, sentAt: r.startedAt, receivedAt: r.endedAt }))
          .slice(-PLAN.phaseSamples);
        out.phases = await temporal.phases(samples);
      }
    }
    log(
      `temporal ${variant.name}: x1 p50 ${fmt(out.c1.latency.p50)} ms, x8 ${fmt(out.c8.rps)} req/s p50 ${fmt(out.c8.latency.p50)} ms (${fmt((now() - started) / 1000)} s)`,
    );
    return out;
  } finally {
    await stop();
    await temporal.close();
    await stopServer();
  }
}

function memorySnapshot(apps) {
  return Object.fromEntries(['api', 'worker', 'projector'].map((a) => [a, rssMb(apps[a].pid)]));
}

/** What the worker's resident memory is made of (MB): anonymous and file-backed pages, and of the
 * anonymous ones the V8 heap (used and reserved) and external buffers, from its own /metrics. */
async function workerMemoryParts(pid) {
  const parts = rssPartsMb(pid) ?? {};
  const r = await send({ method: 'GET', url: `http://127.0.0.1:${WORKER_METRICS_PORT}/metrics`, timeoutMs: 3000 });
  const gauge = (name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(r.body ?? '')?.[1] ?? NaN) / 2 ** 20;
  const spaces = {};
  for (const [, kind, space, value] of (r.body ?? '').matchAll(
    /^nodejs_heap_space_size_(total|used)_bytes\{space="(\w+)"\} (\S+)$/gm,
  )) {
    spaces[space] = { ...spaces[space], [kind]: Math.round(Number(value) / 2 ** 20) };
  }
  return {
    ...parts,
    heapUsed: gauge('nodejs_heap_size_used_bytes'),
    heapTotal: gauge('nodejs_heap_size_total_bytes'),
    external: gauge('nodejs_external_memory_bytes'),
    spaces,
  };
}

// ---------------------------------------------------------------------------------------------

function gitInfo() {
  try {
    const head = readFileSync(join(ROOT, '.git/HEAD'), 'utf8').trim();
    const ref = head.startsWith('ref: ') ? head.slice(5) : undefined;
    const commit = ref ? readFileSync(join(ROOT, '.git', ref), 'utf8').trim() : head;
    return { commit: commit.slice(0, 7), dirty: env.BENCH_GIT_DIRTY === '1' };
  } catch {
    return { commit: 'unknown', dirty: false };
  }
}

async function main() {
  mkdirSync(RUN_DIR, { recursive: true });
  mkdirSync(RESULTS_DIR, { recursive: true });
  log(`${QUICK ? 'quick' : 'full'} run ${TS}; logs in ${RUN_DIR}`);

  const models = await startModelServers();
  log('model servers up');

  const db = new pg.Client({ connectionString: need('DATABASE_URL') });
  await db.connect();
  cleanups.push(() => db.end());

  const { accounts, close } = await openAccounts();
  cleanups.push(close);
  const pools = {
    0: new KeyPool({ accounts, namePrefix: `bench-${TS}-0ms`, baseUrl: MODEL[0], modelKey: MODEL_KEY, log }),
    200: new KeyPool({ accounts, namePrefix: `bench-${TS}-200ms`, baseUrl: MODEL[200], modelKey: MODEL_KEY, log }),
  };
  pools[0].add(need('BENCH_PRIMARY_PROJECT'), need('BENCH_PRIMARY_KEY'));

  const watcherPromise = watchUsageTopic({ brokers: need('KAFKA_BROKERS').split(','), groupId: `mas-bench-${TS}` });
  cleanups.push(async () => (await watcherPromise).close());
  const [{ apps, startupS }, floor] = await Promise.all([
    startApps(),
    startFloor(),
    pools[0].grow(PLAN.pool[0] - 1),
    pools[200].grow(PLAN.pool[200]),
  ]);
  const stackTemporal = temporalPid();
  temporalMetricsUrl = stackTemporal ? await findMetricsUrl(stackTemporal) : undefined;
  log(
    temporalMetricsUrl
      ? `Temporal metrics at ${temporalMetricsUrl}`
      : 'Temporal metrics: not found (no per-request Temporal counts)',
  );
  log(
    `api, worker, projector up (pids ${apps.api.pid}, ${apps.worker.pid}, ${apps.projector.pid}); ${pools[0].size + pools[200].size} projects`,
  );
  const watcher = await watcherPromise;

  const temporal = await openTemporal({
    address: need('TEMPORAL_ADDRESS'),
    namespace: env.TEMPORAL_NAMESPACE || 'default',
  });
  cleanups.push(() => temporal.close());
  cleanups.push(async () => {
    const n = await temporal.terminateOpen(TASK_QUEUE);
    if (n) log(`terminated ${n} open workflow(s) of ${TASK_QUEUE}`);
  });

  const components = componentsOf({
    api: [apps.api.pid],
    worker: [apps.worker.pid],
    relay: [apps.relay.pid],
    projector: [apps.projector.pid],
    model: [models[0].pid, models[200].pid],
    floorWorker: [floor.proc.pid],
  });
  ownPids = new Set([
    apps.api.pid,
    apps.worker.pid,
    apps.relay.pid,
    apps.projector.pid,
    models[0].pid,
    models[200].pid,
    floor.proc.pid,
  ]);

  // The apps' projector and webhook groups (`mas` unless KAFKA_GROUP_PREFIX says otherwise, as
  // `npm start`'s) resume where they were, and what drills and tests wrote since is theirs to read
  // first: measured while they did, the idle CPU was the projector's 540 ms a second and
  // PostgreSQL's 860, and every scenario ran beside it.
  const groupPrefix = env.KAFKA_GROUP_PREFIX || 'mas';
  const catchUpStarted = Date.now();
  const unread = await consumersCaughtUp(
    new Kafka({ clientId: 'mas-bench-lag', brokers: need('KAFKA_BROKERS').split(','), logLevel: logLevel.NOTHING }),
    (id) => id.startsWith(`${groupPrefix}-projector-`) || id === `${groupPrefix}-webhooks`,
  );
  log(
    unread === 0
      ? `the projector and webhook groups caught up in ${fmt((Date.now() - catchUpStarted) / 1000)} s`
      : `the projector and webhook groups still had ${unread} messages unread after ${fmt((Date.now() - catchUpStarted) / 1000)} s: the figures below ran beside their replay`,
  );
  await warmUp(pools);
  await sleep(PLAN.settleMs);
  const idle = memorySnapshot(apps);
  const idleWorkerParts = await workerMemoryParts(apps.worker.pid);
  log(
    `idle worker memory (MB): ${Object.entries(idleWorkerParts)
      .map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : fmt(v)}`)
      .join(', ')}`,
  );
  const idleCpu = await idleCpuRates(components, PLAN.idleMs);
  log(
    `idle CPU (ms/s): ${Object.entries(idleCpu)
      .map(([k, v]) => `${k} ${fmt(v)}`)
      .join(', ')}`,
  );
  const machineBefore = machineSnapshot();
  log(`idle RSS: api ${fmt(idle.api)} MB, worker ${fmt(idle.worker)} MB, projector ${fmt(idle.projector)} MB`);

  const results = { overhead: [], settledMs: {} };
  // Each latency scenario starts once the servers have finished the previous one's work.
  const settled = async (name) => {
    results.settledMs[name] = await settle(components, idleCpu);
    log(`${name}: servers settled after ${fmt(results.settledMs[name])} ms`);
  };
  await settled('floor');
  results.floor = await watched(() => floorScenario(floor, components, idleCpu));
  for (const spec of PLAN.overhead) {
    await settled(`overhead ${spec.latency} ms x${spec.clients}`);
    results.overhead.push(await watched(() => overheadScenario(pools, spec)));
  }
  await settled('tool round');
  results.toolRound = await watched(() => toolRoundScenario(pools));
  await settled('streaming');
  results.streaming = await watched(() => streamingScenario(pools));
  if (!results.streaming.available) log(`streaming: not available (${results.streaming.reason})`);
  results.usageLag = await watched(() => usageLagScenario(pools, watcher, db));

  const phaseSource = results.overhead.find((o) => o.latency === 0 && o.clients === 1);
  const floors = await watched(() => floorsScenario(pools));
  const phases = await temporal.phases(phaseSource.samples.slice(-PLAN.phaseSamples));
  // The same breakdown at 8 clients: where a request waits when requests overlap.
  const phaseSource8 = results.overhead.find((o) => o.latency === 0 && o.clients === 8);
  const phases8 = phaseSource8 ? await temporal.phases(phaseSource8.samples.slice(-PLAN.phaseSamples)) : [];
  log(`profile: ${phases.length + phases8.length} histories read`);
  results.profile = { phases, phases8, floors, idleCpuMsPerSecond: idleCpu };
  if (PLAN.profileMs > 0) Object.assign(results.profile, await profileScenario(pools, apps, components, idleCpu, db));

  results.throughput = await throughputScenario(pools, apps, components, idleCpu, db);
  const machine = otherLoad(machineBefore, machineSnapshot(), ownPids);

  if (PLAN.experiments && env.BENCH_TEMPORAL_BIN) {
    results.experiments = [];
    const searchAttributes = await temporal.searchAttributes().catch(() => []);
    for (const variant of TEMPORAL_VARIANTS) {
      try {
        results.experiments.push(await temporalVariantScenario(pools, variant, searchAttributes));
      } catch (e) {
        // An experiment that cannot run is reported, not a broken benchmark.
        const error = e instanceof Error ? e.message.split('\n')[0] : String(e);
        log(`temporal ${variant.name}: ${error}`);
        results.experiments.push({ name: variant.name, label: variant.label, error });
      }
    }
  }
  const topLevel = results.throughput.levels.at(-1);
  results.memory = {
    idle,
    workerIdleParts: idleWorkerParts,
    underLoad: topLevel && { clients: topLevel.clients, peak: topLevel.peakRssMb },
  };
  results.startupS = startupS;

  // Usage events of the top load level, if the pipeline exists: give the stragglers some time.
  if (results.usageLag.kafka.available && topLevel) {
    const deadline = now() + PLAN.usageWaitMs;
    const ids = topLevel.responses.filter((x) => x.id);
    while (now() < deadline && ids.some((x) => !watcher.seen.has(x.id))) await sleep(100);
    const l = ids.filter((x) => watcher.seen.has(x.id)).map((x) => watcher.seen.get(x.id) - x.at);
    if (l.length)
      results.usageLag.underLoad = { clients: topLevel.clients, lag: summary(l), missing: ids.length - l.length };
  }
  await sleep(PLAN.settleMs);
  results.memory.after = memorySnapshot(apps);

  const git = gitInfo();
  const meta = {
    date: new Date().toISOString(),
    mode: QUICK ? 'quick' : 'full',
    ...git,
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model?.trim() ?? 'unknown',
    taskQueue: TASK_QUEUE,
    projects: pools[0].size + pools[200].size,
    projectsCreatedOnDemand: pools[0].createdOnDemand + pools[200].createdOnDemand,
    durationS: Math.round((now() - t0) / 1000),
    otherLoad: machine,
    plan: PLAN,
  };
  const rows = buildRows({ ...results, cpus: meta.cpus });
  printTable(rows, meta);
  for (const level of results.throughput.levels) delete level.responses;
  for (const o of results.overhead) delete o.samples;
  const file = join(RESULTS_DIR, `${TS}.json`);
  writeFileSync(file, `${JSON.stringify({ meta, table: rows, results }, null, 2)}\n`);
  log(`wrote ${file}${results.profile.profiles ? `; CPU profiles in ${PROFILE_DIR}` : ''}`);
}

let exitCode = 0;
try {
  await main();
} catch (e) {
  exitCode = 1;
  log(`failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
} finally {
  await cleanup();
}
process.exit(exitCode);
