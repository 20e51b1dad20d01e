// The state-scale benchmark: see scripts/bench/state-scale.sh and docs/performance.md.
// Fills a database of its own to a size in production shape with SQL, then times the hot
// statements and jobs through the service's code in dist/. Never fails on timing.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';

const DB = process.env.MAS_BENCH_STATE_DB ?? 'mas_bench_state';
if (!/bench/.test(DB) || /^mas(_test)?$/.test(DB))
  throw new Error(`refusing database ${DB}: the state benchmark drops and refills it`);
const argv = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const sizes = String(opt('sizes', opt('size', '20000,200000')))
  .split(',')
  .map(Number);
const rebuildUpTo = Number(opt('rebuild-up-to', String(Infinity)));
const RUNS = Number(opt('runs', '7'));
const DAYS = 120;
const BACKLOG_DAYS = 3;
const LARGE = 'b0000000-0000-4000-8000-000000000000';

const port = process.env.MAS_PG_PORT ?? '55432';
const url = (db) => `postgres://mas@127.0.0.1:${port}/${db}`;
const log = (m) => console.error(`[bench:state ${new Date().toISOString().slice(11, 19)}] ${m}`);

const { DataSource } = await import('typeorm');
const { dataSourceOptions } = await import('../../dist/libs/persistence/src/index.js');
const { EventStore, SessionStream, RequestStream, toCloudEvent } = await import('../../dist/libs/events/src/index.js');
const { MeteringService } = await import('../../dist/libs/metering/src/index.js');
const { RequestReadModel, rebuildProjection, PROJECTIONS } = await import('../../dist/libs/read-models/src/index.js');
const { SessionsRepository } = await import('../../dist/apps/api/src/sessions/sessions.repository.js');
const { RETENTION_RULES } = await import('../../dist/apps/relay/src/retention.js');
const requestLogProjection = PROJECTIONS.find((p) => p.name === 'request-log');

async function recreate() {
  const admin = new pg.Client({ connectionString: url('postgres') });
  await admin.connect();
  await admin.query(`drop database if exists ${DB} with (force)`);
  await admin.query(`create database ${DB}`);
  await admin.end();
  execFileSync(process.execPath, ['dist/apps/cli/src/main.js', 'migrate'], {
    env: { ...process.env, DATABASE_URL: url(DB) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** Production shape, in SQL: N agent requests over DAYS days (4 events each), a session per 20
 * requests (3 events each), one project with 5% of the traffic, the read models and the tables
 * that retention keeps for a window filled for that window plus BACKLOG_DAYS (a backlog). */
function fillSql(n) {
  const projects = Math.max(20, Math.floor(n / 2000));
  const sessions = Math.floor(n / 20);
  const project = (i) =>
    `(case when ${i} % 20 = 0 then '${LARGE}'::uuid else md5('project-' || (1 + ${i} % ${projects - 1}))::uuid end)`;
  const at = (i, total) => `(now() - make_interval(secs => ${DAYS * 86400}.0 * (${total} - ${i}) / ${total}))`;
  const win = (days) => `now() - interval '${days + BACKLOG_DAYS} days'`;
  return [
    `insert into projects (id, name, plan, credit_balance, period_start) values ('${LARGE}', 'large', 'pro', 100000000, now() - interval '10 days')`,
    `insert into projects (id, name, plan, credit_balance, period_start) select md5('project-' || k)::uuid, 'p' || k, 'pro', 1000000, now() - interval '10 days' from generate_series(1, ${projects - 1}) k`,
    `create unlogged table bench_r as select i, md5('r' || i)::uuid as id, ${project('i')} as project_id, ${at('i', n)} as at from generate_series(1, ${n}) i`,
    `create unlogged table bench_s as select k, md5('s' || k)::uuid as id, ${project('k')} as project_id, ${at('k', sessions)} as at, k > ${sessions} - 5 as active from generate_series(1, ${sessions}) k`,
    `insert into events (event_id, stream_id, version, type, data, metadata, recorded_at)
     select md5(e.stream_id || '/' || e.version)::uuid, e.stream_id, e.version, e.type, e.data, e.metadata, e.recorded_at from (
       select 'agent-request-' || r.id as stream_id, v as version,
              (array['agent-request.accepted.v1','agent-request.tool-calls-requested.v1','agent-request.tool-outputs-submitted.v1','agent-request.completed.v1'])[v] as type,
              case v when 1 then jsonb_build_object('requestId', r.id, 'requestsUsed', 1, 'creditsRemaining', 100)
                     when 3 then jsonb_build_object('requestId', r.id, 'toolCallIds', jsonb_build_array('call_1'))
                     else jsonb_build_object('requestId', r.id, 'status', case v when 2 then 'requires_tool_outputs' else 'completed' end, 'stop', v / 2,
                                             'capabilitiesUsed', '[]'::jsonb, 'creditsCharged', 1, 'inputTokens', 10, 'outputTokens', 5, 'creditsRemaining', 99) end as data,
              jsonb_build_object('projectId', r.project_id, 'correlationId', r.id, 'causationId', r.id) as metadata,
              r.at + make_interval(secs => v) as recorded_at
         from bench_r r cross join generate_series(1, 4) v
       union all
       select 'session-' || s.id, v,
              (array['session.created.v1','session.message-answered.v1','session.expired.v1'])[v],
              case v when 1 then jsonb_build_object('sessionId', s.id, 'createdAt', s.at, 'expiresAt', s.at + interval '1 hour')
                     else jsonb_build_object('sessionId', s.id, 'status', case when v = 3 then 'expired' else 'active' end, 'createdAt', s.at, 'lastActivityAt', s.at + interval '1 minute',
                                             'expiresAt', s.at + interval '1 hour', 'messageCount', 1, 'revision', v - 1) end,
              jsonb_build_object('projectId', s.project_id, 'correlationId', s.id, 'causationId', s.id),
              s.at + make_interval(secs => v)
         from bench_s s cross join generate_series(1, 3) v where not (s.active and v = 3)
     ) e order by e.recorded_at`,
    `insert into streams (stream_id, version, project_id) select 'agent-request-' || id, 4, project_id from bench_r`,
    `insert into streams (stream_id, version, project_id) select 'session-' || id, case when active then 2 else 3 end, project_id from bench_s`,
    `insert into request_log (request_id, project_id, status, stop, capabilities, credits, leg_credits, tokens, leg_tokens, credits_remaining, requests_used, created_at, updated_at, version)
     select id, project_id, 'completed', 2, '{}', 2, 1, 30, 15, 99, 1, at, at + interval '4 seconds', 4 from bench_r where at > ${win(30)}`,
    `insert into request_views (request_id, stop, project_id, view, recorded_at)
     select id, 2, project_id, jsonb_build_object('message', 'The answer of request ' || i || '.', 'requestsUsed', 1), at + interval '4 seconds' from bench_r where at > ${win(30)}`,
    `insert into sessions (id, project_id, status, message_count, created_at, last_activity_at, expires_at, revision, version)
     select id, project_id, case when active then 'active' else 'expired' end, 1, at, at + interval '1 minute', case when active then now() + interval '1 hour' else at + interval '1 hour' end,
            case when active then 1 else 2 end, case when active then 2 else 3 end
       from bench_s where at > ${win(30)}`,
    `insert into session_slots (session_id, project_id, created_at) select id, project_id, at from bench_s where active`,
    `insert into generated_files (id, project_id, request_id, name, media_type, encoding, content, bytes, created_at, expires_at)
     select md5('f' || i)::uuid, project_id, id, 'report-' || i || '.txt', 'text/plain', 'utf8', repeat('x', 200), 200, at, at + interval '7 days' from bench_r where i % 4 = 0 and at > ${win(7)}`,
    `insert into stream_events (request_id, seq, project_id, type, data, created_at)
     select r.id, q, r.project_id, case when q = 10 then 'done' else 'token' end, jsonb_build_object('text', 'token ' || q), r.at + make_interval(secs => q)
       from bench_r r cross join generate_series(1, 10) q where r.i % 3 = 0 and r.at > ${win(1)}`,
    `insert into credit_ledger (request_id, kind, project_id, credits, created_at, reason)
     select id, 'reserve', project_id, 5, at, 'admission' from bench_r`,
    `insert into credit_ledger (request_id, kind, project_id, credits, stop, balance_after, created_at, reason)
     select id, 'settle', project_id, 2, 2, 1000, at + interval '4 seconds', 'stop' from bench_r where i <= ${n} - 20`,
    `insert into outbox (event_id, topic, key, payload, created_at, published_at)
     select event_id, 'mas.events.v1', stream_id, '{}'::jsonb, recorded_at, recorded_at + interval '100 milliseconds' from events where recorded_at > ${win(7)}`,
    `insert into projection_processed (projection, event_id, processed_at)
     select case when stream_id like 'session-%' then 'sessions' else 'request-log' end, event_id, recorded_at + interval '1 second' from events where recorded_at > ${win(30)}`,
    `insert into idempotency_keys (project_id, key, endpoint, body_hash, request_id, created_at)
     select project_id, 'key-' || i, 'POST /v1/agent', 'hash', id, at from bench_r where i % 2 = 0 and at > now() - interval '25 hours' - interval '${BACKLOG_DAYS} days'`,
    `insert into webhook_deliveries (id, subscription_id, project_id, event_id, event_type, body, status, created_at, finished_at)
     select md5('w' || i)::uuid, md5('subscription')::uuid, project_id, md5('e' || i)::uuid, 'agent-request.completed.v1', '{}', 'delivered', at, at + interval '1 second' from bench_r where i % 10 = 0 and at > ${win(30)}`,
  ];
}

async function fill(n) {
  const c = new pg.Client({ connectionString: url(DB) });
  await c.connect();
  const t0 = performance.now();
  await c.query(`set maintenance_work_mem = '256MB'`);
  await c.query(`set work_mem = '64MB'`);
  for (const sql of fillSql(n)) await c.query(sql);
  // What the projector keeps on the session streams' rows where the schema has it (migration
  // 1763700000030): every session's row was written up to its stream's version (and since pruned
  // when older than 30 days), but for the newest five, which the projector has not reached yet.
  const [{ projected }] = (
    await c.query(
      `select count(*)::int as projected from information_schema.columns where table_name = 'streams' and column_name = 'projected_version'`,
    )
  ).rows;
  if (projected)
    await c.query(
      `update streams set projected_version = version where stream_id like 'session-%' and stream_id not in (select 'session-' || md5('s' || k)::uuid from generate_series(${Math.floor(n / 20)} - 4, ${Math.floor(n / 20)}) k)`,
    );
  await c.query(`drop table bench_r, bench_s`);
  await c.query(`vacuum analyze`);
  const [counts] = (
    await c.query(`select (select count(*) from events)::int as events, (select count(*) from request_log)::int as request_log, (select count(*) from sessions)::int as sessions,
                          (select count(*) from credit_ledger)::int as ledger, pg_size_pretty(pg_database_size(current_database())) as size`)
  ).rows;
  await c.end();
  return { fillSeconds: Math.round((performance.now() - t0) / 100) / 10, ...counts };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
async function time(fn) {
  await fn();
  const ms = [];
  for (let k = 0; k < RUNS; k++) {
    const t = performance.now();
    await fn();
    ms.push(performance.now() - t);
  }
  return median(ms);
}

/** Counts the statements and the longest one of `fn`, with the WAL it wrote. */
async function instrumented(db, fn) {
  const query = db.query.bind(db);
  let statements = 0;
  let longest = 0;
  db.query = async (...a) => {
    const t = performance.now();
    try {
      return await query(...a);
    } finally {
      statements++;
      longest = Math.max(longest, performance.now() - t);
    }
  };
  const lsn = async () => (await query(`select pg_current_wal_lsn()::text as l`))[0].l;
  const walBytes = async (from) =>
    Number((await query(`select pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint as b`, [from]))[0].b);
  const from = await lsn();
  const t = performance.now();
  try {
    const result = await fn();
    return { ms: performance.now() - t, statements, longestMs: longest, walMB: (await walBytes(from)) / 1e6, result };
  } finally {
    db.query = query;
  }
}

async function measure(n) {
  const db = new DataSource({ ...dataSourceOptions({ databaseUrl: url(DB) }), logging: false, logger: undefined });
  await db.initialize();
  const events = new EventStore();
  const sessionStream = new SessionStream(events);
  const requests = new RequestStream(events, sessionStream);
  const repo = new SessionsRepository(db, sessionStream);
  const readModel = new RequestReadModel(db, requests);
  const metering = new MeteringService(db, events, requests);
  const sessions = Math.floor(n / 20);
  // The newest request of the large project with a file, its newest session.
  const request = (
    await db.query(
      `select md5('r' || i)::uuid::text as id from generate_series(${n} - 100, ${n}) i where i % 20 = 0 order by i desc limit 1`,
    )
  )[0].id;
  const session = (
    await db.query(
      `select md5('s' || k)::uuid::text as id from generate_series(${sessions} - 100, ${sessions}) k where k % 20 = 0 order by k desc limit 1`,
    )
  )[0].id;
  const r = {};
  const list = await repo.list(LARGE, { limit: 20 });
  r.sessionsListed = list.records.length;
  const behind = await instrumented(db, () => repo.list(LARGE, { limit: 20 }));
  r.sessionsListStatements = behind.statements;
  r['GET /v1/sessions (large project)'] = await time(() => repo.list(LARGE, { limit: 20 }));
  r['GET /v1/sessions/{id}'] = await time(() => repo.find(LARGE, session));
  if (!(await readModel.find(request))?.files?.length)
    throw new Error('the request read model found no files: the fill is not in the shape the benchmark expects');
  r['GET /v1/agent/{id} (and a webhook render)'] = await time(() => readModel.find(request));
  r.openReservations = (await metering.openReservations(new Date(Date.now() - 1000), 1000)).length;
  r['reconciler: open reservations'] = await time(() => metering.openReservations(new Date(Date.now() - 1000), 100));

  // Retention: the backlog (BACKLOG_DAYS past each window), then a steady pass with nothing to delete.
  const settings = { streamRetentionSeconds: 24 * 60 * 60 };
  const backlog = {};
  for (const rule of RETENTION_RULES) backlog[rule.table] = await instrumented(db, () => rule.prune(db, settings));
  // Then what autovacuum does after a mass delete (the backlog's dead index entries would otherwise
  // be read by the next pass), and the steady pass, as retention runs every 10 minutes.
  await db.query(`vacuum ${RETENTION_RULES.map((rule) => rule.table).join(', ')}`);
  const steady = {};
  for (const rule of RETENTION_RULES) steady[rule.table] = await instrumented(db, () => rule.prune(db, settings));
  r.retention = Object.fromEntries(
    Object.keys(backlog).map((t) => [
      t,
      {
        deleted: backlog[t].result,
        backlogMs: backlog[t].ms,
        longestStatementMs: backlog[t].longestMs,
        statements: backlog[t].statements,
        walMB: backlog[t].walMB,
        steadyMs: steady[t].ms,
      },
    ]),
  );
  r['retention: backlog pass, longest statement'] = Math.max(...Object.values(backlog).map((b) => b.longestMs));
  r['retention: backlog pass, WAL MB of the largest rule'] = Math.max(...Object.values(backlog).map((b) => b.walMB));
  r['retention: steady pass (nothing due)'] = Object.values(steady).reduce((s, b) => s + b.ms, 0);

  if (n <= rebuildUpTo) {
    // A live projector's writes while the request log is rebuilt from the event store: the longest
    // any of them waited is the swap's lock as the projector sees it.
    let stop = false;
    let longestWrite = 0;
    let writes = 0;
    const writer = (async () => {
      while (!stop) {
        const id = randomUUID();
        const event = toCloudEvent({
          id: randomUUID(),
          type: 'agent-request.accepted.v1',
          subject: `agent-request-${id}`,
          time: new Date(),
          data: { requestId: id, requestsUsed: 1, creditsRemaining: 1 },
          projectId: LARGE,
          correlationId: id,
          causationId: id,
          streamVersion: 1,
        });
        const t = performance.now();
        await db.transaction(async (tx) => {
          await tx.query(`insert into projection_processed (projection, event_id) values ('request-log', $1)`, [
            event.id,
          ]);
          await requestLogProjection.apply(tx, event);
        });
        longestWrite = Math.max(longestWrite, performance.now() - t);
        writes++;
        await new Promise((res) => setTimeout(res, 20));
      }
    })();
    const t = performance.now();
    const result = await rebuildProjection(db, requestLogProjection, 'events');
    r['rebuild request-log (events), s'] = (performance.now() - t) / 1000;
    stop = true;
    await writer;
    r.rebuild = { ...result, writes };
    r['rebuild: longest wait of a live write (swap lock)'] = longestWrite;
    r.rowsPastRetentionAfterRebuild = Number(
      (await db.query(`select count(*) as c from request_log where updated_at < now() - interval '30 days'`))[0].c,
    );
  }
  await db.destroy();
  return r;
}

const results = [];
for (const n of sizes) {
  log(`size ${n}: recreating ${DB} and migrating`);
  await recreate();
  log(`size ${n}: filling`);
  const filled = await fill(n);
  log(
    `size ${n}: filled in ${filled.fillSeconds} s (${filled.events} events, ${filled.request_log} request_log rows, ${filled.sessions} sessions, ${filled.ledger} ledger rows, ${filled.size})`,
  );
  const measured = await measure(n);
  results.push({ size: n, filled, measured });
  log(`size ${n}: measured ${JSON.stringify(measured)}`);
}

const keys = Object.keys(results[0].measured).filter(
  (k) => typeof results[0].measured[k] === 'number' && (k.includes(' ') || k.includes('/')),
);
const fmt = (v) => (v === undefined ? '-' : v >= 100 ? v.toFixed(0) : v.toFixed(1));
const header = [
  'statement or job (ms unless said)',
  ...results.map((x) => `${x.size}`),
  `x (${results.at(-1).size}/${results[0].size})`,
];
const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
for (const k of keys) {
  const vs = results.map((x) => x.measured[k]);
  lines.push(
    `| ${k} | ${vs.map(fmt).join(' | ')} | ${vs[0] && vs.at(-1) !== undefined ? (vs.at(-1) / vs[0]).toFixed(2) : '-'} |`,
  );
}
console.log(lines.join('\n'));
for (const x of results) {
  console.log(
    `\nsize ${x.size}: ${JSON.stringify(x.filled)}; sessions listed ${x.measured.sessionsListed} in ${x.measured.sessionsListStatements} statements; open reservations ${x.measured.openReservations}`,
  );
  for (const [t, v] of Object.entries(x.measured.retention))
    console.log(
      `  retention ${t}: deleted ${v.deleted} in ${fmt(v.backlogMs)} ms (${v.statements} statements, longest ${fmt(v.longestStatementMs)} ms, WAL ${v.walMB.toFixed(1)} MB); steady ${fmt(v.steadyMs)} ms`,
    );
  if (x.measured.rebuild)
    console.log(
      `  rebuild: ${JSON.stringify(x.measured.rebuild)}; rows past retention after it: ${x.measured.rowsPastRetentionAfterRebuild}`,
    );
}
mkdirSync('bench/results', { recursive: true });
const file = `bench/results/state-${new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+/, '')}.json`;
writeFileSync(file, JSON.stringify({ db: DB, sizes, days: DAYS, backlogDays: BACKLOG_DAYS, results }, null, 2));
log(`written ${file}`);
