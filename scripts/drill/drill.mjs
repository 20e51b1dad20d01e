// The fault drills behind `npm run drill` (scripts/drill/run.sh prepares the build, the stack and
// a database of its own, then runs this). Apps run from dist/ as processes on their own ports,
// task queue and consumer groups; a bounded load of keyed requests runs on loopback while each
// fault is injected; after each fault the invariants are checked and one table is printed.
//
// Faults: kill -9 of the api, the worker, the long-activity worker (the bulkhead: streamed model
// calls and built-in tools at a lower CPU priority), the relay and the projector (by pid; the drill
// restarts the app after 1 s, as `npm start` does), Kafka stopped and started, Temporal restarted,
// PostgreSQL restarted (immediate), a deploy of a changed worker build and its rollback with work
// in flight (deploy-phase.mjs). Then the same apps with two replicas each: one of each is
// killed at once and stays dead; the survivors carry the load, and the rate limit and the quota
// are checked across both api replicas.
//
// Invariants after each fault: every keyed request has a final outcome (200 or a 4xx other than
// 429 rate_limited, which is retried after its Retry-After; read back by GET); no request charged
// twice and the balance equals what was added minus the settled charges; every charge has exactly
// one usage event on mas.usage.v1 (by CloudEvent id) and none without a charge; the projection
// counted each charge once; no 5xx except 502/503 during the fault; no reservation left open; a
// fresh request succeeds within RECOVERY_BOUND_S of the fault ending. Exit status 1 when any
// invariant breaks, 2 when the harness itself fails.
import { randomUUID } from 'node:crypto';
import { execFile, spawn } from 'node:child_process';
import { existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { Kafka, logLevel } from 'kafkajs';
import { kafkaConnectionOptions, loadConfig, temporalConnectionOptions } from '#libs/config';
import { TOPICS } from '#libs/contracts';
import { clearTaskQueue } from '#libs/temporal';
import { send } from '../bench/lib/http.mjs';
import { consumersCaughtUp } from '../bench/lib/kafka-lag.mjs';
import { openAccounts } from '../bench/lib/key-pool.mjs';
import { freePorts, startProcess, stopAll, tail } from '../bench/lib/procs.mjs';
import { appProcess } from '../app-process.mjs';
import { deployScenario } from './deploy-phase.mjs';
import { moneyProblems } from './mixed-load.mjs';
import { noisyNeighbour, ratioText } from './noisy-neighbour-phase.mjs';
import { printSoak, soak } from './soak.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    soak: { type: 'string' },
    projects: { type: 'string' },
    // The noisy-neighbour phase's two windows, in seconds each (default 20 with --quick, else 300),
    // and how many times it alternates them (default 1; the figure is then the rounds' mean).
    'noisy-seconds': { type: 'string' },
    'noisy-rounds': { type: 'string' },
  },
});
const QUICK = args.quick;
const NOISY_SECONDS = args['noisy-seconds'] === undefined ? undefined : Number(args['noisy-seconds']);
if (NOISY_SECONDS !== undefined && !(NOISY_SECONDS > 0)) {
  console.error(`--noisy-seconds must be a number of seconds above 0, got "${args['noisy-seconds']}"`);
  process.exit(2);
}
const NOISY_ROUNDS = args['noisy-rounds'] === undefined ? 1 : Number(args['noisy-rounds']);
if (!Number.isInteger(NOISY_ROUNDS) || NOISY_ROUNDS < 1) {
  console.error(`--noisy-rounds must be a whole number of rounds from 1, got "${args['noisy-rounds']}"`);
  process.exit(2);
}
const env = process.env;
const RUN_DIR = env.DRILL_RUN_DIR ?? '/tmp';
const PID_FILE = join(RUN_DIR, 'pids');
const TS = env.DRILL_TS ?? String(Date.now());
const TASK_QUEUE = `drill-${TS}`;
/** The stated bound: after a fault ends, a fresh request succeeds within this many seconds. */
const RECOVERY_BOUND_S = 60;
const PICKUP_MS = 5000;
const PLAN = QUICK
  ? { clients: 3, beforeMs: 2000, outageMs: 3000, afterMs: 3000, paceMs: 1100 }
  : { clients: 6, beforeMs: 8000, outageMs: 8000, afterMs: 10000, paceMs: 1100 };
const MAS_PLANS = JSON.stringify({
  pro: { monthlyQuota: 1_000_000_000, capabilities: ['chat', 'research', 'documents', 'code', 'data', 'files'] },
  starter: { monthlyQuota: 5, capabilities: ['chat'] },
});

const t0 = performance.now();
const log = (s) => process.stderr.write(`[drill +${((performance.now() - t0) / 1000).toFixed(1)}s] ${s}\n`);
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const run = promisify(execFile);
/** scripts/stack.sh on the local stack (run.sh says whether PostgreSQL is the stack's own). */
const stackEnv = { ...env };
if (env.DRILL_LOCAL_POSTGRES === '1') delete stackEnv.DATABASE_URL;
const stack = (command, component) =>
  run('bash', [join(ROOT, 'scripts/stack.sh'), command, component], { timeout: 180_000, env: stackEnv });
/** DRILL_CLUSTER=1 (scripts/stack/cluster-drill.sh): the engines are the cluster profile's, over
 * TLS; the faults are its own (a broker, a Temporal service), never the default stack's. */
const CLUSTER = env.DRILL_CLUSTER === '1';
const cluster = (...a) => run('bash', [join(ROOT, 'scripts/stack/cluster.sh'), ...a], { timeout: 180_000, env });
/** TLS and authentication to Kafka and Temporal as the apps read them (KAFKA_SSL*, TEMPORAL_TLS*). */
const engines = loadConfig(env).engines;

// ---------------------------------------------------------------------------------------------
// Apps as processes

const cleanups = [];
let cleaningUp;
const cleanup = () =>
  (cleaningUp ??= (async () => {
    for (const fn of cleanups.reverse()) await fn().catch((e) => log(`cleanup: ${e.message}`));
  })());
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => void cleanup().finally(() => process.exit(130)));

/** One app process (one replica), restartable under the same name, port and log. */
class App {
  /** `root`: the build it runs from (the deploy phase runs a changed copy). */
  constructor(name, replica, port, root = ROOT) {
    Object.assign(this, { name, replica, port, root, proc: undefined, starts: 0 });
  }
  get label() {
    return `${this.name}${this.replica}`;
  }
  get url() {
    return `http://127.0.0.1:${this.port}`;
  }
  start() {
    this.starts++;
    const logFile = join(RUN_DIR, `${this.label}.log`);
    this.logOffset = existsSync(logFile) ? readFileSync(logFile, 'utf8').length : 0;
    const { command, args, env: appEnv } = appProcess(this.name, { root: this.root });
    this.proc = startProcess({
      name: this.label,
      command,
      args,
      env: {
        ...env,
        ...appEnv,
        ...(this.port ? { PORT: String(this.port), PUBLIC_BASE_URL: this.url } : {}),
        TEMPORAL_TASK_QUEUE: TASK_QUEUE,
        TEMPORAL_LONG_ACTIVITY_TASK_QUEUE: `${TASK_QUEUE}-long`,
        MAS_PLANS,
        AGENT_PICKUP_TIMEOUT_MS: String(PICKUP_MS),
        RECONCILER_INTERVAL_SECONDS: '30',
        KAFKA_GROUP_PREFIX: `mas-drill-${TS}`,
      },
      logFile,
      pidFile: PID_FILE,
    });
  }
  async ready(timeoutMs = 180_000) {
    const marker = {
      worker: 'polling task queue',
      'worker-long': 'polling task queue',
      relay: 'relaying',
      projector: 'running projections',
    }[this.name];
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.proc.exited)
        throw new Error(`${this.label} exited (${this.proc.exitCode}):\n${tail(this.proc.logFile)}`);
      if (this.name === 'api') {
        if ((await send({ agent, method: 'GET', url: `${this.url}/healthz`, timeoutMs: 2000 })).status === 200) return;
      } else if (
        existsSync(this.proc.logFile) &&
        readFileSync(this.proc.logFile, 'utf8').slice(this.logOffset).includes(marker)
      )
        return;
      await sleep(200);
    }
    throw new Error(`${this.label} was not ready within ${timeoutMs / 1000} s:\n${tail(this.proc.logFile)}`);
  }
  kill9() {
    this.proc.child.kill('SIGKILL');
  }
  async waitExited() {
    while (!this.proc.exited) await sleep(20);
  }
}

// ---------------------------------------------------------------------------------------------
// Load: keyed requests, retried with their key until they have a final answer

class Load {
  constructor(apis, keys) {
    Object.assign(this, { apis, keys, requests: [], running: false, loops: [], faultWindows: [] });
  }
  liveApis() {
    return this.apis.filter((a) => !a.proc.exited);
  }
  /** A new keyed request of the project whose key is `auth`, driven to its end. */
  one(auth, deadlineMs = 90_000) {
    const r = { key: randomUUID(), auth, attempts: [], final: undefined, requestIds: new Set() };
    this.requests.push(r);
    return this.drive(r, deadlineMs);
  }
  /** Sends (again) until a final answer: retried with the same key (on another replica when there
   * is one) on no answer, 502 or 503, and after Retry-After on 429 rate_limited, as a careful
   * client does. A 429 rate_limited is no answer to the request: the rate limit is checked before
   * the key's stored answer is replayed, and every retry counts toward it (docs/decisions.md). */
  async drive(r, deadlineMs) {
    const until = performance.now() + deadlineMs;
    for (let i = 0; performance.now() < until; i++) {
      const apis = this.liveApis();
      const api = apis[(r.attempts.length + i) % Math.max(apis.length, 1)] ?? this.apis[0];
      const res = await send({
        agent,
        url: `${api.url}/v1/agent`,
        headers: { authorization: `Bearer ${r.auth}`, 'idempotency-key': r.key },
        body: { message: 'drill', capabilities: ['chat'] },
        timeoutMs: 60_000,
      });
      let body;
      try {
        body = JSON.parse(res.body);
      } catch {
        body = undefined;
      }
      r.attempts.push({ at: performance.now(), status: res.status, code: body?.error?.code, error: res.error });
      const id = res.headers?.['x-request-id'];
      if (id) r.requestIds.add(String(id));
      if (res.status === 200) {
        r.final = { status: 200, id: body.id, credits: body.usage.credits_this_request };
        return r;
      }
      if (res.status === 429 && body?.error?.code === 'rate_limited') {
        await sleep(Number(res.headers?.['retry-after'] ?? 1) * 1000);
        continue;
      }
      if (res.status >= 400 && res.status < 500) {
        r.final = { status: res.status, code: body?.error?.code };
        return r;
      }
      await sleep(300);
    }
    return r;
  }
  start() {
    this.running = true;
    // Each client rotates over three projects, so that load and read-backs stay well under the
    // rate limit of 60 requests a minute per project.
    const clients = Array.from({ length: Math.ceil(this.keys.length / 3) }, (_, i) =>
      this.keys.slice(i * 3, i * 3 + 3),
    );
    this.loops = clients.map(async (keys) => {
      for (let n = 0; this.running; n++) {
        const began = performance.now();
        await this.one(keys[n % keys.length]);
        await sleep(Math.max(0, PLAN.paceMs - (performance.now() - began)));
      }
    });
  }
  async stop() {
    this.running = false;
    await Promise.all(this.loops);
  }
}

/** Recovery: the time from the end of the fault to the 200 of a fresh keyed request sent then
 * (retried with its key like the load's, and checked with them). */
async function recoveredWithin(load, auth, since, boundS) {
  const r = await load.one(auth, boundS * 1000);
  return r.final?.status === 200 ? (performance.now() - since) / 1000 : undefined;
}

// ---------------------------------------------------------------------------------------------
// Invariants

/** A Kafka client of the harness's own, reaching the brokers as the apps do. */
function drillKafka(clientId) {
  return new Kafka({
    clientId,
    brokers: env.KAFKA_BROKERS.split(','),
    ...kafkaConnectionOptions(engines.kafka),
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
  });
}

/** Waits until every Kafka consumer group of this drill (its apps' projector and webhook groups,
 * `mas-drill-<ts>-*`, and its own usage watcher) has read its topics to the end, up to `timeoutMs`;
 * returns the messages still unread then (0: caught up). Each group is new in each run and starts
 * at the beginning of its topics, which on a machine that ran the tests hold their events too: a
 * phase that measures latency must not measure it while the projector replays them. */
function drillConsumersCaughtUp(timeoutMs = 180_000) {
  return consumersCaughtUp(
    drillKafka('mas-drill-lag'),
    (id) => id.startsWith(`mas-drill-${TS}-`) || id === `mas-drill-watch-${TS}`,
    { timeoutMs },
  );
}

async function usageWatcher() {
  const consumer = drillKafka('mas-drill').consumer({
    groupId: `mas-drill-watch-${TS}`,
    sessionTimeout: 10_000,
    heartbeatInterval: 3000,
    maxWaitTimeInMs: 500,
  });
  const byId = new Map(); // CloudEvent id -> { project, request, credits, copies }
  await consumer.connect();
  // From the beginning: a group that has not committed yet and rejoins (its coordinator broker
  // killed by a cluster drill) would otherwise start again at the end of the topic and miss what
  // came in between, counting events as lost that are on the topic. Older events belong to other
  // projects and are filtered out by the checks.
  await consumer.subscribe({ topic: TOPICS.usage, fromBeginning: true });
  const joined = new Promise((resolve) => consumer.on(consumer.events.GROUP_JOIN, resolve));
  await consumer.run({
    eachMessage: async ({ message }) => {
      try {
        const e = JSON.parse(message.value.toString('utf8'));
        const seen = byId.get(e.id);
        if (seen) seen.copies++;
        else
          byId.set(e.id, {
            project: e.data.project_id,
            request: e.data.request_id,
            credits: e.data.credits,
            copies: 1,
          });
      } catch {
        // not a CloudEvent: not ours to judge here
      }
    },
  });
  await Promise.race([joined, sleep(30_000)]);
  return { byId, close: () => consumer.disconnect().catch(() => undefined) };
}

async function check(phase, { db, usage, load, projects, recoveryS, added }) {
  const problems = [];
  // Requests still without a final answer get their retries now (the fault is over).
  for (const r of load.requests.filter((x) => !x.final)) await load.drive(r, 60_000);
  const sent = load.requests.length;
  const lost = load.requests.filter((r) => !r.final).length;
  const splitKeys = load.requests.filter((r) => r.requestIds.size > 1).length;
  // Every 200 reads back as completed (GET answers from a read model that may lag a projector
  // that was down: wait for it, bounded).
  let unread = load.requests.filter((x) => x.final?.status === 200);
  for (let i = 0; i < 60 && unread.length > 0; i++) {
    if (i > 0) await sleep(1000);
    const still = [];
    for (const r of unread) {
      const api = load.liveApis()[0];
      const res = await send({
        agent,
        method: 'GET',
        url: `${api.url}/v1/agent/${r.final.id}`,
        headers: { authorization: `Bearer ${r.auth}` },
        timeoutMs: 10_000,
      });
      if (res.status === 429) await sleep(Number(res.headers['retry-after'] ?? 1) * 1000);
      if (res.status !== 200 || JSON.parse(res.body).status !== 'completed') {
        r.lastRead = `${res.status} ${res.error ?? res.body.slice(0, 200)}`;
        still.push(r);
      }
    }
    unread = still;
  }
  if (unread.length > 0) log(`${phase}: not read back, e.g. ${unread[0].final.id}: ${unread[0].lastRead}`);
  const unreadable = unread.length;
  const bad5xx = load.requests
    .flatMap((r) => r.attempts)
    .filter(
      (a) =>
        a.status >= 500 &&
        !((a.status === 502 || a.status === 503) && load.faultWindows.some(([from, to]) => a.at >= from && a.at <= to)),
    ).length;
  const answered = load.requests.filter((r) => r.final?.status === 200);
  const told = new Map(answered.map((r) => [r.final.id, r.final.credits]));
  const money = await moneyProblems({
    db,
    usage,
    projects: projects.ids.map((id, i) => ({ id, told: i === 0 ? told : new Map() })),
    added,
  });
  const row = {
    phase,
    sent,
    ok: answered.length,
    refused: load.requests.filter((r) => r.final && r.final.status !== 200).length,
    retried: load.requests.filter((r) => r.attempts.length > 1).length,
    lost: lost + splitKeys + unreadable,
    doubleCharges: money.counts.chargedOtherThanTold + money.counts.balanceOff,
    usageLost: money.counts.usageLost,
    usageDoubled: money.counts.usageDoubled,
    usageCopies: money.counts.usageCopies,
    projectionOff: money.counts.projectionOff,
    bad5xx,
    openReservations: money.counts.open,
    recoveryS: recoveryS === undefined ? 'none' : recoveryS.toFixed(1),
  };
  if (row.lost)
    problems.push(
      `${lost} request(s) without a final answer, ${splitKeys} key(s) split across request ids, ${unreadable} answer(s) not read back by GET`,
    );
  problems.push(...money.problems);
  if (row.bad5xx) problems.push(`${row.bad5xx} 5xx answer(s) outside the fault or other than 502/503`);
  if (recoveryS === undefined || recoveryS > RECOVERY_BOUND_S)
    problems.push(`no recovery within ${RECOVERY_BOUND_S} s`);
  if (row.ok === 0) problems.push('no request succeeded: the drill measured nothing');
  row.verdict = problems.length ? 'FAIL' : 'ok';
  return { row, problems };
}

// ---------------------------------------------------------------------------------------------
// Phases

async function projectsFor(accounts, n, phase, plan = 'pro') {
  const entries = [];
  for (let i = 0; i < n; i++) {
    const p = await accounts.createProject({ name: `drill-${TS}-${phase}-${i}`, plan, capabilities: ['chat'] });
    await accounts.addCredits(p.id, 100_000);
    await accounts.setModel(p.id, { provider: 'scripted', model: 'scripted-drill' });
    const { key } = await accounts.createApiKey(p.id, 'npm run drill');
    entries.push({ id: p.id, key });
  }
  return { keys: entries.map((e) => e.key), ids: entries.map((e) => e.id) };
}

/** One project of the pro plan with every capability the scripted model serves, `credits` added,
 * and its key (the soak and the noisy-neighbour phase). */
const projectMaker = (accounts, phase) => async (label, credits) => {
  const p = await accounts.createProject({
    name: `drill-${TS}-${phase}-${label}`,
    plan: 'pro',
    capabilities: ['chat', 'documents'],
  });
  await accounts.addCredits(p.id, credits);
  await accounts.setModel(p.id, { provider: 'scripted', model: 'scripted-drill' });
  const { key } = await accounts.createApiKey(p.id, 'npm run drill');
  return { id: p.id, key };
};

/** Runs one fault under load and checks the invariants. `inject` returns when the fault is over
 * (the component is back, or the app respawned), or `{ permanent: true }` for a replica left dead. */
async function phase(name, { accounts, db, usage, apis, inject }) {
  log(`phase ${name}`);
  const projects = await projectsFor(accounts, PLAN.clients * 3, name.replace(/\W+/g, '-'));
  const load = new Load(apis, projects.keys);
  load.start();
  await sleep(PLAN.beforeMs);
  const from = performance.now();
  await inject();
  const ended = performance.now();
  const recoveryS = await recoveredWithin(load, projects.keys[0], ended, RECOVERY_BOUND_S);
  load.faultWindows.push([from, performance.now() + PICKUP_MS + 5000]);
  await sleep(PLAN.afterMs);
  await load.stop();
  load.faultWindows.push([from, performance.now()]); // answers to requests sent during the fault may come late
  return check(name, { db, usage, load, projects, recoveryS, added: 100_000 });
}

/** The deploy phase under the same load and invariants as a fault (deploy-phase.mjs says what it
 * does); its own problems (a paused request or session not answered, a failed workflow task, a
 * reservation held) are the phase's too. */
async function deploy(ctx, temporal, apps) {
  const found = [];
  const result = await phase('deploy: roll forward and back', {
    ...ctx,
    inject: async () => {
      const startWorker = async (root) => {
        const worker = new App('worker', '-changed-build', undefined, root);
        worker.start();
        await worker.ready();
        apps.push(worker);
        return { stop: () => stopAll([worker.proc], 20_000) };
      };
      const namespace = env.TEMPORAL_NAMESPACE || 'default';
      const d = await deployScenario({
        api: ctx.apis[0],
        send,
        agent,
        temporal: { client: temporal, connection: temporal.connection },
        namespace,
        taskQueue: TASK_QUEUE,
        accounts: ctx.accounts,
        db: ctx.db,
        startWorker,
        runDir: RUN_DIR,
        root: ROOT,
        log,
        quick: QUICK,
      });
      found.push(...d.problems);
    },
  });
  result.problems.push(...found);
  if (found.length) result.row.verdict = 'FAIL';
  return result;
}

/** Rate limit and quota across two api replicas: exact, whichever replica answers. */
async function sharedLimits(accounts, apis) {
  const [rate] = (await projectsFor(accounts, 1, 'rate')).keys;
  const statuses = await Promise.all(
    Array.from({ length: 70 }, (_, i) =>
      send({
        agent,
        method: 'GET',
        url: `${apis[i % apis.length].url}/v1/agent/${randomUUID()}`,
        headers: { authorization: `Bearer ${rate}` },
        timeoutMs: 20_000,
      }).then((r) => r.status),
    ),
  );
  const limited = statuses.filter((s) => s === 429).length;
  const [quota] = (await projectsFor(accounts, 1, 'quota', 'starter')).keys;
  const answers = [];
  for (let i = 0; i < 8; i++) {
    const r = await send({
      agent,
      url: `${apis[i % apis.length].url}/v1/agent`,
      headers: { authorization: `Bearer ${quota}` },
      body: { message: 'quota', capabilities: ['chat'] },
      timeoutMs: 30_000,
    });
    answers.push(r.status === 429 ? JSON.parse(r.body).error.code : r.status);
  }
  const served = answers.filter((a) => a === 200).length;
  const over = answers.filter((a) => a === 'quota_exceeded').length;
  const ok = limited === 10 && served === 5 && over === 3;
  return {
    ok,
    text: `rate limit: ${70 - limited} of 70 served, ${limited} refused (expected 60/10); quota 5: ${served} served, ${over} quota_exceeded (expected 5/3)`,
  };
}

/**
 * Two apis behind HAProxy, with the cluster profile's configuration (`cluster.sh haproxy-config`),
 * and the load sent through it only: one api is killed -9 and left dead, so HAProxy must take it
 * out (health check on /readyz) and requests in flight on it are retried by the clients through
 * HAProxy with their Idempotency-Key. The api is started again afterwards. Skipped, and said so,
 * where HAProxy is not installed.
 */
async function behindLoadBalancer(ctx, [api, victim]) {
  const name = '2 apis behind HAProxy: kill -9 one';
  const haproxy = ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy'].find((p) => existsSync(p));
  if (!haproxy) {
    log(`${name}: skipped, HAProxy is not installed (apt-get install haproxy)`);
    return undefined;
  }
  const [port] = await freePorts(1);
  const config = join(RUN_DIR, 'haproxy.cfg');
  const { stdout } = await promisify(execFile)('bash', [
    join(ROOT, 'scripts/stack/cluster.sh'),
    'haproxy-config',
    String(port),
    String(api.port),
    String(victim.port),
  ]);
  writeFileSync(config, stdout);
  const logFd = openSync(join(RUN_DIR, 'haproxy.log'), 'a');
  const lb = spawn(haproxy, ['-f', config, '-db'], { stdio: ['ignore', logFd, logFd] });
  const front = { url: `http://127.0.0.1:${port}`, proc: { exited: false } };
  const stopLb = async () => {
    if (lb.exitCode === null) lb.kill('SIGKILL');
  };
  cleanups.push(stopLb);
  try {
    for (let i = 0; ; i++) {
      if ((await send({ agent, method: 'GET', url: `${front.url}/readyz`, timeoutMs: 2000 })).status === 200) break;
      if (i > 100) throw new Error(`HAProxy did not answer on ${front.url} within 20 s (${RUN_DIR}/haproxy.log)`);
      await sleep(200);
    }
    return await phase(name, {
      ...ctx,
      apis: [front],
      inject: async () => {
        victim.kill9();
        await victim.waitExited();
        return { permanent: true };
      },
    });
  } finally {
    await stopLb();
    if (victim.proc.exited) {
      victim.start();
      await victim.ready();
    }
  }
}

async function startAll(replicas) {
  const ports = await freePorts(replicas);
  const apps = [];
  for (let r = 1; r <= replicas; r++)
    for (const name of ['api', 'worker', 'worker-long', 'relay', 'projector'])
      apps.push(new App(name, r, name === 'api' ? ports[r - 1] : undefined));
  for (const a of apps) a.start();
  cleanups.push(() =>
    stopAll(
      apps.map((a) => a.proc),
      20_000,
    ),
  );
  await Promise.all(apps.map((a) => a.ready()));
  return apps;
}

const killAndRespawn = (app) => async () => {
  app.kill9();
  await app.waitExited();
  await sleep(1000); // npm start's first backoff
  app.start();
  await app.ready();
};

const component = (name, how) => async () => {
  try {
    if (how === 'restart') await stack('restart', name);
    else {
      await stack('stop', name);
      await sleep(PLAN.outageMs);
    }
  } finally {
    if (how !== 'restart') await stack('start', name);
  }
};

/** kill -9 of one process of the cluster profile (for `kafka`: the active KRaft controller, which
 * also leads one of the three partitions of each topic), then, after the outage, `up` of its part. */
const clusterKill = (what) => async () => {
  const name = what === 'kafka' ? `kafka-${(await cluster('kafka-controller')).stdout.trim()}` : what;
  log(`kill -9 ${name}`);
  await cluster('kill', name);
  await sleep(PLAN.outageMs);
  await cluster('up', name.startsWith('kafka') ? 'kafka' : 'temporal');
};

async function main() {
  const { accounts, db, close } = await openAccounts();
  cleanups.push(close);
  // At the end (after the apps have stopped): the drill's workflows still open and its reconciler
  // schedule go, so the shared Temporal server does not keep firing their timers.
  const temporal = new Client({
    connection: await Connection.connect({
      address: env.TEMPORAL_ADDRESS,
      ...temporalConnectionOptions(engines.temporal),
    }),
    namespace: env.TEMPORAL_NAMESPACE || 'default',
  });
  cleanups.push(async () => {
    const n = await clearTaskQueue(temporal, TASK_QUEUE, 'npm run drill finished');
    if (n) log(`terminated ${n} open workflow(s) of ${TASK_QUEUE}`);
    await temporal.connection.close();
  });
  const usage = await usageWatcher();
  cleanups.push(usage.close);
  const rows = [];
  const problems = [];
  const record = ({ row, problems: p }) => {
    rows.push(row);
    problems.push(...p.map((x) => `${row.phase}: ${x}`));
    log(`${row.phase}: ${row.verdict} ${p.join('; ')}`);
  };
  const only = args.only ? new RegExp(args.only) : undefined;
  const want = (name) => !only || only.test(name);

  log('starting one replica of each app');
  let apps = await startAll(1);
  const by = (name, r = 1) => apps.find((a) => a.name === name && a.replica === r);
  const apis = () => apps.filter((a) => a.name === 'api');
  const ctx = () => ({ accounts, db, usage, apis: apis() });
  if (args.soak) {
    const result = await soak({
      minutes: Number(args.soak),
      projects: Number(args.projects ?? 12),
      apps,
      apis: apis(),
      db,
      usage,
      agent,
      log,
      newProject: projectMaker(accounts, 'soak'),
    });
    await stopAll(
      apps.map((a) => a.proc),
      20_000,
    );
    printSoak(result);
    writeFileSync(join(RUN_DIR, 'soak.json'), JSON.stringify(result, null, 2));
    if (result.problems.length) {
      process.stderr.write(`\nINVARIANTS BROKEN:\n  - ${result.problems.join('\n  - ')}\n`);
      return 1;
    }
    process.stderr.write('\nevery invariant held\n');
    return 0;
  }
  const single = [
    ['kill -9 api', killAndRespawn(by('api'))],
    ['kill -9 worker', killAndRespawn(by('worker'))],
    ['kill -9 worker-long', killAndRespawn(by('worker-long'))],
    ['kill -9 relay', killAndRespawn(by('relay'))],
    ['kill -9 projector', killAndRespawn(by('projector'))],
    ['kafka stop/start', component('kafka', 'stop')],
    ['temporal restart', component('temporal', 'restart')],
    ...(env.DRILL_LOCAL_POSTGRES === '1' ? [['postgres restart', component('postgres', 'restart')]] : []),
  ];
  const clusterFaults = [
    ['cluster: kill -9 kafka controller', clusterKill('kafka')],
    ['cluster: kill -9 temporal history', clusterKill('temporal-history')],
    ['cluster: kill -9 temporal matching', clusterKill('temporal-matching')],
  ];
  // On the cluster, the apps' own faults too (kill -9 of the api, the worker, the relay, over TLS
  // to replicated engines), and the replicas phase below.
  for (const [name, inject] of CLUSTER ? [...clusterFaults, ...single.slice(0, 3)] : single)
    if (want(name)) record(await phase(name, { ...ctx(), inject }));
  if (!CLUSTER && want('deploy')) record(await deploy(ctx(), temporal, apps));
  if (!CLUSTER && want('noisy neighbour')) {
    const { figures, problems: found } = await noisyNeighbour({
      quick: QUICK,
      windowSeconds: NOISY_SECONDS,
      rounds: NOISY_ROUNDS,
      apis: apis(),
      db,
      usage,
      agent,
      log,
      newProject: projectMaker(accounts, 'noisy'),
      runDir: RUN_DIR,
      caughtUp: drillConsumersCaughtUp,
    });
    record({
      row: {
        phase: `noisy neighbour: p99 ${ratioText(figures)} (target < 1.20)`,
        sent: figures.alone.n + figures.beside.n,
        ok: figures.alone.n + figures.beside.n,
        verdict: found.length ? 'FAIL' : 'ok',
        noisy: figures,
      },
      problems: found,
    });
  }
  await stopAll(
    apps.map((a) => a.proc),
    20_000,
  );

  if (want('replicas') || want('HAProxy')) {
    log('starting two replicas of each app');
    apps = await startAll(2);
    const limits = await sharedLimits(accounts, apis());
    log(limits.text);
    if (!limits.ok) problems.push(`replicas: ${limits.text}`);
    if (want('HAProxy')) {
      const result = await behindLoadBalancer(ctx(), apis());
      if (result) record(result);
    }
    if (want('replicas')) {
      record(
        await phase('2 replicas: kill -9 one of each', {
          ...ctx(),
          inject: async () => {
            for (const name of ['api', 'worker', 'worker-long', 'relay', 'projector']) by(name, 2).kill9();
            await Promise.all(['api', 'worker', 'worker-long', 'relay', 'projector'].map((n) => by(n, 2).waitExited()));
          },
        }),
      );
      rows.at(-1).limits = limits.ok ? 'exact' : 'OFF';
    }
    await stopAll(
      apps.map((a) => a.proc),
      20_000,
    );
  }

  printTable(rows);
  writeFileSync(
    join(RUN_DIR, 'drill.json'),
    JSON.stringify({ quick: QUICK, recoveryBoundS: RECOVERY_BOUND_S, rows, problems }, null, 2),
  );
  if (problems.length) {
    process.stderr.write(`\nINVARIANTS BROKEN:\n  - ${problems.join('\n  - ')}\n`);
    return 1;
  }
  process.stderr.write('\nevery invariant held\n');
  return 0;
}

function printTable(rows) {
  const cols = [
    ['phase', 'fault'],
    ['sent', 'sent'],
    ['ok', '200'],
    ['refused', '4xx'],
    ['retried', 'retried'],
    ['lost', 'lost'],
    ['doubleCharges', 'double charges'],
    ['usageLost', 'usage lost'],
    ['usageDoubled', 'usage doubled'],
    ['usageCopies', 'redelivered copies'],
    ['projectionOff', 'projection off'],
    ['bad5xx', 'bad 5xx'],
    ['openReservations', 'open reservations'],
    ['recoveryS', 'recovery s'],
    ['verdict', 'verdict'],
  ];
  const lines = [
    `| ${cols.map((c) => c[1]).join(' | ')} |`,
    `|${cols.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${cols.map(([k]) => String(r[k] ?? '')).join(' | ')} |`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

let code = 2;
try {
  code = await main();
} catch (e) {
  log(`the drill itself failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
} finally {
  await cleanup();
  agent.destroy();
}
process.exit(code);
