// `npm run bench -- --only streams` (scripts/bench/run.sh prepares the build, the stack and the
// database, then runs this instead of bench.mjs): what open streams cost PostgreSQL while they
// wait (issue 28). It starts a scripted model server, the api and the worker from dist/ on their
// own port and task queue, pauses one background run per project on a tool call (a run that waits
// up to 5 minutes for its tool outputs: its streams have nothing to say), opens 1, 100 and 500
// `GET /v1/agent/{id}/events` streams on those runs, and measures, over a window at each level,
// the transactions committed in the database per second (pg_stat_database.xact_commit) and the
// connections open to it (numbackends); then 1, 10 and 40 streams that write (streamed answers of
// the scripted model), and the transactions per second while they write. Writes
// bench/results/streams-<timestamp>.json.
//
// Streams are spread over projects: the api allows 60 requests a minute per project.
import { mkdirSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { jsonOf, send } from './lib/http.mjs';
import { openAccounts } from './lib/key-pool.mjs';
import { freePorts, stopAll, waitFor } from './lib/procs.mjs';
import { startModelAndApps } from './lib/scenario-apps.mjs';
import { openTemporal } from './lib/temporal-phases.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: args } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } },
  strict: false,
});
const LEVELS = [1, 100, 500];
const PROJECTS = 20;
/** A backend that goes idle reports its counts up to 10 s later (PostgreSQL 15): the opening of
 * the streams is left to be reported before the window starts. */
const SETTLE_MS = 12_000;
const WINDOW_MS = args.quick ? 5_000 : 15_000;
/** Streams writing tokens at once, each a 30 s answer; measured from 3 s after they were sent,
 * while every one of them writes (a busy backend reports its counts within a second). */
const WRITING_LEVELS = [1, 10, 40];
const WRITING_SETTLE_MS = 3_000;
const WRITING_WINDOW_MS = args.quick ? 5_000 : 15_000;

const env = process.env;
const need = (name) => {
  if (!env[name]) throw new Error(`${name} is not set (run with npm run bench -- --only streams)`);
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
const log = (s) => process.stderr.write(`[bench streams] ${s}\n`);

const procs = [];
const cleanups = [];
/** Commits and connections of the database, as PostgreSQL counts them. */
async function dbCounts(client) {
  await client.query('select pg_stat_clear_snapshot()');
  const { rows } = await client.query(
    `select xact_commit::bigint as commits, numbackends as backends from pg_stat_database where datname = current_database()`,
  );
  return { commits: Number(rows[0].commits), backends: Number(rows[0].backends) };
}

/** Opens an SSE stream that stays open; resolves once its headers came. */
function openStream(id, key) {
  return new Promise((resolvePromise, reject) => {
    const req = httpRequest(
      `${API}/v1/agent/${id}/events`,
      { agent: false, headers: { authorization: `Bearer ${key}` } },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`events: ${res.statusCode}`));
          return;
        }
        res.resume();
        resolvePromise(req);
      },
    );
    req.on('error', (e) => reject(e));
    req.end();
  });
}

try {
  await startModelAndApps({
    label: 'streams',
    names: ['api', 'worker'],
    env,
    apiPort: API_PORT,
    modelPort: MODEL_PORT,
    modelKey: MODEL_KEY,
    runDir: RUN_DIR,
    pidFile: PID_FILE,
    procs,
  });
  log('api and worker up');
  const taskQueue = `bench-streams-${TS}`;
  const temporal = await openTemporal({
    address: need('TEMPORAL_ADDRESS'),
    namespace: env.TEMPORAL_NAMESPACE || 'default',
  });
  cleanups.push(() => temporal.close());
  // The paused runs would wait 5 minutes for their tool outputs: terminated on the way out.
  cleanups.push(async () =>
    log(`terminated ${await temporal.terminateOpen(taskQueue)} open workflow(s) of ${taskQueue}`),
  );

  const { accounts, close } = await openAccounts();
  cleanups.push(close);
  const runs = [];
  for (let i = 0; i < PROJECTS; i++) {
    const project = await accounts.createProject({
      name: `bench-streams-${TS}-${i}`,
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
    const { key } = await accounts.createApiKey(project.id, 'npm run bench -- --only streams');
    const started = await send({
      url: `${API}/v1/agent`,
      headers: { authorization: `Bearer ${key}` },
      body: { message: 'Look something up.', tools: [TOOL], background: true },
    });
    if (started.status !== 200) throw new Error(`background request: ${started.status} ${started.body}`);
    runs.push({ id: jsonOf(started).id, key });
  }
  // Each run pauses on the model's tool call: up to 5 minutes of a stream with nothing to say.
  for (const run of runs) {
    await waitFor(
      `run ${run.id} to pause`,
      60_000,
      async () =>
        jsonOf(
          await send({
            method: 'GET',
            url: `${API}/v1/agent/${run.id}`,
            headers: { authorization: `Bearer ${run.key}` },
          }),
        ).status === 'requires_tool_outputs',
    );
  }
  log(`${runs.length} runs paused for tool outputs`);

  const pgClient = new pg.Client({
    connectionString: env.DATABASE_URL ?? need('DATABASE_URL'),
    application_name: 'bench-streams',
  });
  await pgClient.connect();
  cleanups.push(() => pgClient.end());
  const rows = [];
  const measure = async (open) => {
    await sleep(SETTLE_MS);
    const a = await dbCounts(pgClient);
    const t0 = Date.now();
    await sleep(WINDOW_MS);
    const b = await dbCounts(pgClient);
    const seconds = (Date.now() - t0) / 1000;
    const row = {
      open,
      transactionsPerSecond: Number(((b.commits - a.commits) / seconds).toFixed(2)),
      connections: b.backends,
    };
    rows.push(row);
    log(`${open} open streams: ${row.transactionsPerSecond} transactions/s, ${row.connections} connections`);
  };
  await measure(0);
  for (const level of LEVELS) {
    const streams = await Promise.all(
      Array.from({ length: level }, (_, i) => openStream(runs[i % runs.length].id, runs[i % runs.length].key)),
    );
    await measure(level);
    for (const stream of streams) stream.destroy();
  }
  // Streams that write: the scripted model streams a word every 10 ms (about 30 s for this message),
  // and every stream's tokens leave the worker together (TokenFlusher): the database's commits
  // should stay near 20 a second whatever the number of streams, where one insert a stream each
  // 50 ms grew by 20 a second a stream.
  const writing = [];
  const words = Array.from({ length: 3000 }, (_, i) => `w${i}`).join(' ');
  const scripted = [];
  for (let i = 0; i < PROJECTS; i++) {
    const project = await accounts.createProject({
      name: `bench-streams-${TS}-writing-${i}`,
      plan: 'pro',
      capabilities: ['chat'],
    });
    await accounts.addCredits(project.id, 1000);
    await accounts.setModel(project.id, { provider: 'scripted', model: 'scripted-bench' });
    scripted.push((await accounts.createApiKey(project.id, 'npm run bench -- --only streams')).key);
  }
  for (const level of WRITING_LEVELS) {
    const requests = Array.from({ length: level }, (_, i) =>
      send({
        url: `${API}/v1/agent`,
        headers: { authorization: `Bearer ${scripted[i % scripted.length]}` },
        body: { message: words, stream: true },
        timeoutMs: 120_000,
      }),
    );
    await sleep(WRITING_SETTLE_MS);
    const a = await dbCounts(pgClient);
    const t0 = Date.now();
    await sleep(WRITING_WINDOW_MS);
    const b = await dbCounts(pgClient);
    const row = {
      writing: level,
      transactionsPerSecond: Number(((b.commits - a.commits) / ((Date.now() - t0) / 1000)).toFixed(2)),
    };
    const answers = await Promise.all(requests);
    row.completed = answers.filter((r) => r.status === 200 && r.body.includes('event: done')).length;
    writing.push(row);
    log(
      `${level} streams writing: ${row.transactionsPerSecond} transactions/s (${row.completed} of ${level} ended with done)`,
    );
  }

  const base = rows[0];
  console.log('| open streams | transactions/s in the database | connections to it |');
  console.log('|---:|---:|---:|');
  for (const row of rows)
    console.log(
      `| ${row.open} | ${row.transactionsPerSecond}${row.open ? ` (${row.transactionsPerSecond - base.transactionsPerSecond >= 0 ? '+' : ''}${(row.transactionsPerSecond - base.transactionsPerSecond).toFixed(2)})` : ''} | ${row.connections} |`,
    );
  const one = writing[0];
  console.log('\n| streams writing tokens | transactions/s in the database | against one stream |');
  console.log('|---:|---:|---:|');
  for (const row of writing)
    console.log(
      `| ${row.writing} | ${row.transactionsPerSecond} | x${(row.transactionsPerSecond / one.transactionsPerSecond).toFixed(2)} |`,
    );
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  const file = join(ROOT, 'bench/results', `streams-${TS}.json`);
  writeFileSync(
    file,
    JSON.stringify({ scenario: 'streams', ts: TS, windowMs: WINDOW_MS, projects: PROJECTS, rows, writing }, null, 2),
  );
  log(`written ${file}`);
} finally {
  for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  await stopAll(procs);
}
