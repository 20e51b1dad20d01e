// `npm run bench -- --only round-trips` (scripts/bench/run.sh prepares the build, the stack and the
// database, then runs this instead of bench.mjs): the PostgreSQL round trips of each endpoint
// (issue 30). A database in another zone adds its latency to every round trip a caller waits for.
//
// The api and the worker reach PostgreSQL through a proxy of this script's own, one each, which
// reads the client's side of the wire protocol and counts the messages a client waits on: a Sync
// (the end of an extended-protocol query: node-pg's parameterised queries) or a simple Query. That
// is every round trip, awaited or not; the result file lists each endpoint's statements. The proxy can also hold each of the server's answers for a
// fixed delay: an endpoint's p50 with the delay, minus its p50 without, divided by the delay, is
// the number of round trips the caller waited for one after another (the api's and the worker's,
// whichever are on the path to the answer). The relay and the projector run beside them, straight
// to PostgreSQL. Writes bench/results/round-trips-<timestamp>.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { jsonOf, send } from './lib/http.mjs';
import { openAccounts } from './lib/key-pool.mjs';
import { freePorts, stopAll } from './lib/procs.mjs';
import { startModelAndApps } from './lib/scenario-apps.mjs';
import { percentile } from './lib/stats.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: args } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } },
  strict: false,
});
/** Each endpoint this many times at each delay; the median is reported. */
const REPEATS = args.quick ? 3 : 7;
/** The delay held on each of PostgreSQL's answers in the second pass. */
const DELAY_MS = 40;

const env = process.env;
const need = (name) => {
  if (!env[name]) throw new Error(`${name} is not set (run with npm run bench -- --only round-trips)`);
  return env[name];
};
const TS = need('BENCH_TS');
const RUN_DIR = need('BENCH_RUN_DIR');
const PID_FILE = join(RUN_DIR, 'pids');
const MODEL_KEY = need('BENCH_MODEL_KEY');
const [API_PORT, MODEL_PORT] = await freePorts(2);
const API = `http://127.0.0.1:${API_PORT}`;
const TOOL = {
  name: 'lookup',
  description: 'Looks something up.',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
};
const log = (s) => process.stderr.write(`[bench round-trips] ${s}\n`);

/**
 * A TCP proxy in front of PostgreSQL that counts the round trips its clients make (Sync and Query
 * messages), keeps the text of each (`statements`), and delays each chunk of the server's answers
 * by `delayMs`, in order.
 */
async function startPgProxy(target) {
  const state = { roundTrips: 0, delayMs: 0, statements: [] };
  const sockets = new Set();
  const server = createServer((client) => {
    const upstream = createConnection(target);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
    }
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    // The client's side: a startup message (length first, no type byte), then typed messages.
    let pending = Buffer.alloc(0);
    let started = false;
    let parsed;
    client.on('data', (chunk) => {
      upstream.write(chunk);
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      for (;;) {
        const header = started ? 5 : 4;
        if (pending.length < header) break;
        const length = started ? pending.readInt32BE(1) + 1 : pending.readInt32BE(0);
        if (pending.length < length) break;
        if (!started) {
          // An SSLRequest or GSSENCRequest is followed by another startup message.
          const code = pending.readInt32BE(4);
          if (code !== 80877103 && code !== 80877104) started = true;
        } else if (pending[0] === 0x50 /* Parse: name, then the statement's text */) {
          const nameEnd = pending.indexOf(0, 5);
          parsed = pending.toString('utf8', nameEnd + 1, pending.indexOf(0, nameEnd + 1));
        } else if (pending[0] === 0x53 /* Sync */ || pending[0] === 0x51 /* Query */) {
          state.roundTrips += 1;
          const text = pending[0] === 0x51 ? pending.toString('utf8', 5, length - 1) : (parsed ?? '(prepared)');
          state.statements.push(text.replace(/\s+/g, ' ').slice(0, 160));
          parsed = undefined;
        }
        pending = pending.subarray(length);
      }
    });
    // The server's side, held `delayMs` and kept in order.
    let releaseAt = 0;
    upstream.on('data', (chunk) => {
      if (state.delayMs === 0 && releaseAt <= Date.now()) {
        client.write(chunk);
        return;
      }
      releaseAt = Math.max(Date.now() + state.delayMs, releaseAt);
      setTimeout(() => client.write(chunk), releaseAt - Date.now());
    });
  });
  await new Promise((resolvePromise) => server.listen(0, '127.0.0.1', resolvePromise));
  const close = () => {
    const closed = new Promise((r) => server.close(r));
    for (const s of sockets) s.destroy();
    return closed;
  };
  return { state, port: server.address().port, close };
}

const procs = [];
const cleanups = [];
try {
  const database = new URL(need('DATABASE_URL'));
  const proxies = {};
  for (const app of ['api', 'worker']) {
    proxies[app] = await startPgProxy({ host: database.hostname, port: Number(database.port || 5432) });
    cleanups.push(() => proxies[app].close());
  }
  // The relay and the projector run as in production (reads answer from the read models) and
  // reach PostgreSQL directly: they are on no caller's path, and are not counted.
  const throughProxy = (app) => {
    const url = new URL(database);
    url.hostname = '127.0.0.1';
    url.port = String(proxies[app].port);
    return { DATABASE_URL: url.toString() };
  };
  await startModelAndApps({
    label: 'round-trips',
    names: ['api', 'worker', 'relay', 'projector'],
    env,
    apiPort: API_PORT,
    modelPort: MODEL_PORT,
    modelKey: MODEL_KEY,
    runDir: RUN_DIR,
    pidFile: PID_FILE,
    procs,
    appEnv: (app) => (proxies[app] ? throughProxy(app) : {}),
  });
  log('api and worker up, each through its own counting proxy; relay and projector up');

  const { accounts, close } = await openAccounts();
  cleanups.push(close);
  /** A project of its own for each endpoint and delay: the rate limit (60 a minute) and the
   * 10 active sessions a project may have are never in the way. */
  let projects = 0;
  const newKey = async () => {
    const project = await accounts.createProject({
      name: `bench-round-trips-${TS}-${projects++}`,
      plan: 'pro',
      capabilities: ['chat'],
    });
    await accounts.addCredits(project.id, 1000);
    await accounts.setModel(project.id, {
      provider: 'openai',
      model: 'bench',
      baseUrl: `http://127.0.0.1:${MODEL_PORT}/v1`,
      apiKey: MODEL_KEY,
    });
    return (await accounts.createApiKey(project.id, 'npm run bench -- --only round-trips')).key;
  };
  const call = async (key, method, path, body, headers = {}) => {
    const res = await send({
      method,
      url: `${API}${path}`,
      headers: { authorization: `Bearer ${key}`, ...headers },
      body,
    });
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${res.body}`);
    return jsonOf(res);
  };
  const agent = (key) => call(key, 'POST', '/v1/agent', { message: 'Say hello.' });
  const paused = async (key) => {
    const first = await call(key, 'POST', '/v1/agent', { message: 'Look something up.', tools: [TOOL] });
    if (first.status !== 'requires_tool_outputs') throw new Error(`tool round: ${first.status}`);
    return first;
  };
  const outputsOf = (first) => ({
    tool_outputs: first.tool_calls.map((c) => ({ tool_call_id: c.id, output: '{"answer":42}' })),
    _compute_instance: first._compute_instance,
  });

  /** Each endpoint: `prepare` (not measured) makes what `run` needs; `run` is the measured call. */
  const endpoints = [
    { name: 'POST /v1/agent (answered)', run: (key) => agent(key) },
    { name: 'POST /v1/agent (pauses for tools)', run: (key) => paused(key) },
    {
      name: 'POST /v1/agent/{id}/tool-outputs',
      prepare: (key) => paused(key),
      run: (key, first) => call(key, 'POST', `/v1/agent/${first.id}/tool-outputs`, outputsOf(first)),
    },
    {
      name: 'POST /v1/agent (background)',
      run: (key) => call(key, 'POST', '/v1/agent', { message: 'Say hello.', background: true }),
    },
    {
      name: 'GET /v1/agent/{id}',
      prepare: (key) => agent(key),
      run: (key, r) => call(key, 'GET', `/v1/agent/${r.id}`),
    },
    { name: 'POST /v1/sessions', run: (key) => call(key, 'POST', '/v1/sessions', {}) },
    {
      name: 'POST /v1/sessions (Idempotency-Key)',
      run: (key) => call(key, 'POST', '/v1/sessions', {}, { 'idempotency-key': `rt-${Math.random()}` }),
    },
    {
      name: 'POST /v1/sessions/{id}/messages',
      prepare: (key) => call(key, 'POST', '/v1/sessions', {}),
      run: (key, s) => call(key, 'POST', `/v1/sessions/${s.id}/messages`, { message: 'Say hello.' }),
    },
    {
      name: 'GET /v1/sessions/{id}',
      prepare: (key) => call(key, 'POST', '/v1/sessions', {}),
      run: (key, s) => call(key, 'GET', `/v1/sessions/${s.id}`),
    },
    {
      name: 'GET /v1/sessions',
      prepare: (key) => call(key, 'POST', '/v1/sessions', {}),
      run: (key) => call(key, 'GET', '/v1/sessions'),
    },
    {
      name: 'DELETE /v1/sessions/{id}',
      prepare: (key) => call(key, 'POST', '/v1/sessions', {}),
      run: (key, s) => call(key, 'DELETE', `/v1/sessions/${s.id}`),
    },
  ];

  /** Round trips counted by each proxy while `fn` runs and the work it set off settles. */
  const counted = async (fn) => {
    for (const proxy of Object.values(proxies)) proxy.state.statements = [];
    const before = { api: proxies.api.state.roundTrips, worker: proxies.worker.state.roundTrips };
    const started = performance.now();
    const value = await fn();
    const ms = performance.now() - started;
    // The worker's work after the answer (a workflow's last task, its close) is counted too.
    await sleep(400 + 3 * proxies.api.state.delayMs);
    return {
      value,
      ms,
      api: proxies.api.state.roundTrips - before.api,
      worker: proxies.worker.state.roundTrips - before.worker,
      statements: { api: [...proxies.api.state.statements], worker: [...proxies.worker.state.statements] },
    };
  };
  const median = (xs) => percentile(xs, 50);

  // Warm-up: every pool connection opened, every statement prepared once, the workflow code loaded.
  {
    const key = await newKey();
    for (const endpoint of endpoints) {
      const prepared = endpoint.prepare ? await endpoint.prepare(key) : undefined;
      await endpoint.run(key, prepared);
    }
  }
  // What the apps do on their own (pollers), per second: the noise under every count below.
  const idle = await counted(() => sleep(5000));
  log(`idle: api ${idle.api}, worker ${idle.worker} round trips in 5 s`);

  const rows = [];
  for (const endpoint of endpoints) {
    const at = {};
    for (const delayMs of [0, DELAY_MS]) {
      proxies.api.state.delayMs = delayMs;
      proxies.worker.state.delayMs = delayMs;
      const key = await newKey();
      const samples = [];
      for (let i = 0; i < REPEATS; i++) {
        const prepared = endpoint.prepare ? await endpoint.prepare(key) : undefined;
        samples.push(await counted(() => endpoint.run(key, prepared)));
      }
      at[delayMs] = {
        statements: samples.at(-1).statements,
        p50Ms: median(samples.map((s) => s.ms)),
        api: median(samples.map((s) => s.api)),
        worker: median(samples.map((s) => s.worker)),
      };
    }
    const waited = (at[DELAY_MS].p50Ms - at[0].p50Ms) / DELAY_MS;
    const row = {
      endpoint: endpoint.name,
      api: at[0].api,
      worker: at[0].worker,
      waitedFor: Number(waited.toFixed(1)),
      p50Ms: Number(at[0].p50Ms.toFixed(1)),
      p50WithDelayMs: Number(at[DELAY_MS].p50Ms.toFixed(1)),
      // What each app sent in the last sample without the delay, in order (the pollers' included).
      statements: at[0].statements,
    };
    rows.push(row);
    log(`${row.endpoint}: api ${row.api}, worker ${row.worker}, waited for ${row.waitedFor}`);
  }
  proxies.api.state.delayMs = 0;
  proxies.worker.state.delayMs = 0;

  console.log(
    `| endpoint | round trips: api | round trips: worker | waited for, one after another (p50 +${DELAY_MS} ms each) | p50 ms | p50 ms, +${DELAY_MS} ms a round trip |`,
  );
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const r of rows)
    console.log(`| ${r.endpoint} | ${r.api} | ${r.worker} | ${r.waitedFor} | ${r.p50Ms} | ${r.p50WithDelayMs} |`);
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  const file = join(ROOT, 'bench/results', `round-trips-${TS}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      { scenario: 'round-trips', ts: TS, repeats: REPEATS, delayMs: DELAY_MS, idle5s: idle, rows },
      null,
      2,
    ),
  );
  log(`written ${file}`);
} finally {
  await stopAll(procs);
  for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
}
