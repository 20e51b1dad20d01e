// The benchmark's one table: rows built from the results, printed aligned, stored in the JSON.
import { difference, fmt, summary, triple } from './stats.mjs';
import { phaseTable } from './temporal-phases.mjs';

const count = (errors) => Object.values(errors ?? {}).reduce((a, b) => a + b, 0);
const pct = (x) => `${(x * 100).toFixed(0)}%`;
const signed = (x, unit) => `${x >= 0 ? '+' : ''}${fmt(x)} ${unit}`;

/** The table's rows: { scenario, clients, n, measured, baseline, vs, errors }, all strings. */
export function buildRows(r) {
  const rows = [];
  // `others`: the share of the machine's CPU that processes outside the benchmark used meanwhile.
  let others = '';
  let vsFloor = '';
  const row = (scenario, clients, n, measured, baseline = '', vs = '', errors = '') =>
    rows.push({
      scenario,
      clients: String(clients ?? ''),
      n: String(n ?? ''),
      measured,
      baseline,
      vs,
      vsFloor,
      errors: String(errors),
      others,
    });
  const na = (scenario, reason) => row(scenario, '', '', `not available: ${reason}`);
  const othersOf = (x) => (x ? pct(x.otherShare) : '');
  // Each service row as a ratio to the Temporal floor at the same number of clients (8 above 8).
  const floor = r.floor;
  const floorAt = (clients) => (clients <= 1 ? floor?.c1.latency : floor?.c8.latency);
  const ratio = (a, b) => (a !== undefined && b ? `x${(a / b).toFixed(2)}` : '-');
  const latencyVsFloor = (overhead, clients) =>
    floor ? `${ratio(overhead.p50, floorAt(clients).p50)} p50, ${ratio(overhead.p99, floorAt(clients).p99)} p99` : '';

  if (floor) {
    others = othersOf(floor.others);
    row(
      'floor: Temporal Update-with-Start + 1 local activity',
      1,
      floor.c1.latency.n,
      triple(floor.c1.latency),
      '',
      '',
      count(floor.c1.errors),
    );
    row(
      'floor: Temporal Update-with-Start + 1 local activity',
      8,
      floor.c8.latency.n,
      `${fmt(floor.c8.rps)} req/s (p50 ${fmt(floor.c8.latency.p50)}, p99 ${fmt(floor.c8.latency.p99)} ms)`,
      '',
      '',
      count(floor.c8.errors),
    );
    const c = floor.c8.cpuMsPerRequest;
    if (c)
      row(
        'floor: CPU per request',
        8,
        '',
        `${fmt(sum(c, FLOOR_PROCESSES))} ms (${FLOOR_PROCESSES.filter((k) => c[k] >= 0.05)
          .map((k) => `${k} ${fmt(c[k])}`)
          .join(', ')})`,
      );
  }

  for (const o of r.overhead) {
    others = othersOf(o.others);
    vsFloor = latencyVsFloor(o.overhead, o.clients);
    row(
      `overhead, POST /v1/agent, ${o.latency} ms model`,
      o.clients,
      o.api.n,
      triple(o.api),
      triple(o.baseline),
      triple(o.overhead, 'ms', true),
      count(o.errors),
    );
  }

  const t = r.toolRound;
  others = othersOf(t.others);
  vsFloor = latencyVsFloor(t.leg1.overhead, 1);
  row(
    'tool round, leg 1: POST /v1/agent',
    1,
    t.leg1.api.n,
    triple(t.leg1.api),
    triple(t.leg1.baseline),
    triple(t.leg1.overhead, 'ms', true),
    count(t.errors),
  );
  vsFloor = latencyVsFloor(t.leg2.overhead, 1);
  row(
    'tool round, leg 2: POST .../tool-outputs',
    1,
    t.leg2.api.n,
    triple(t.leg2.api),
    triple(t.leg2.baseline),
    triple(t.leg2.overhead, 'ms', true),
  );

  others = othersOf(r.streaming.others);
  if (!r.streaming.available) na('streaming, time to first token', r.streaming.reason);
  else {
    for (const s of r.streaming.rows) {
      vsFloor = floor ? `floor p50 ${signed(s.overhead.p50 - floor.c1.latency.p50, 'ms')}` : '';
      row(
        `streaming, first token, ${s.latency} ms model`,
        s.clients,
        s.api.n,
        triple(s.api),
        triple(s.baseline),
        triple(s.overhead, 'ms', true),
        count(s.errors),
      );
    }
  }

  for (const l of r.throughput.levels) {
    others = othersOf(l.machine);
    vsFloor = floor ? ratio(l.rps, floor.c8.rps) : '';
    row(
      'throughput, POST /v1/agent, 0 ms model',
      l.clients,
      l.requests,
      `${fmt(l.rps)} req/s (p50 ${fmt(l.latency.p50)}, p99 ${fmt(l.latency.p99)} ms)`,
      `${fmt(l.baselineRps)} req/s`,
      `x${(l.rps / l.baselineRps).toPrecision(2)}`,
      `${count(l.errors)} (${(l.errorRate * 100).toFixed(1)}%)${
        count(l.errors)
          ? `: ${Object.entries(l.errors)
              .map(([k, v]) => `${k} ${v}`)
              .join(', ')}`
          : ''
      }`,
    );
  }
  vsFloor = '';
  others = '';
  if (r.throughput.turned) row('throughput: saturated from', r.throughput.turned.clients, '', r.throughput.turned.why);

  const u = r.usageLag;
  others = othersOf(u.others);
  const lagRow = (scenario, clients, x) =>
    row(
      scenario,
      clients,
      x.lag.n,
      triple(x.lag, 'ms', true),
      'the response',
      '',
      x.missing ? `${x.missing} missing` : 0,
    );
  if (u.kafka.available) lagRow('usage lag: response -> event on mas.usage.v1', 1, u.kafka);
  else na('usage lag: response -> event on mas.usage.v1', u.kafka.reason);
  others = othersOf(r.throughput.levels.at(-1)?.machine);
  if (u.underLoad) lagRow('usage lag: response -> mas.usage.v1, top load', u.underLoad.clients, u.underLoad);
  others = othersOf(u.others);
  if (u.projection.available) {
    lagRow('usage lag: response -> request_log row', 1, u.projection);
    if (u.projection.sharedGroups && u.projection.missing)
      rows.at(-1).errors += ` (${u.projection.sharedGroups}: another projector took them)`;
  } else na('usage lag: response -> request_log row', u.projection.reason);

  const m = r.memory;
  others = '';
  for (const app of ['api', 'worker', 'projector']) {
    const idle = m.idle[app];
    const loaded = m.underLoad?.peak?.[app];
    row(
      `memory (RSS), ${app}`,
      m.underLoad?.clients ?? '',
      '',
      loaded !== undefined ? `${fmt(loaded)} MB peak under load` : '-',
      `${fmt(idle)} MB idle`,
      loaded !== undefined ? `${signed(loaded - idle, 'MB')} (x${(loaded / idle).toFixed(2)})` : '',
      `after: ${fmt(m.after[app])} MB`,
    );
  }
  const w = m.workerIdleParts;
  if (w)
    row(
      'memory (RSS), worker at idle, of which',
      '',
      '',
      `anonymous ${fmt(w.anonymous)} MB (V8 heap ${fmt(w.heapTotal)} MB, ${fmt(w.heapUsed)} used; external ${fmt(w.external)} MB), file-backed ${fmt(w.file)} MB`,
      '',
      '',
      '',
    );

  if (r.startupS) {
    others = '';
    const s = r.startupS;
    const parts = ['api', 'worker', 'projector'].filter((k) => s[k] !== undefined).map((k) => `${k} ${fmt(s[k])} s`);
    row(
      'startup: spawn -> ready (api /readyz, worker polling)',
      '',
      '',
      parts.join(', '),
      '',
      s.workerBundle ? `worker's webpack bundling: ${fmt(s.workerBundle)} s` : '',
    );
  }

  // The profile: where one request's time and the machine's CPU go.
  const p = r.profile;
  others = othersOf(r.overhead.find((o) => o.latency === 0 && o.clients === 1)?.others);
  if (p.phases?.length) {
    for (const part of phaseTable(p.phases, summary)) row(`profile: ${part.label}`, 1, part.n, triple(part));
    if (p.phases8?.length)
      for (const part of phaseTable(p.phases8, summary)) row(`profile: ${part.label}`, 8, part.n, triple(part));
  }
  others = othersOf(p.floors.others);
  row(
    'profile: GET /healthz (HTTP + Nest floor)',
    1,
    p.floors.healthz.latency.n,
    triple(p.floors.healthz.latency),
    '',
    '',
    count(p.floors.healthz.errors),
  );
  row(
    'profile: GET /v1/files/{id}, 404 (+ auth, rate limit)',
    1,
    p.floors.authFloor.latency.n,
    triple(p.floors.authFloor.latency),
    triple(p.floors.healthz.latency),
    triple(difference(p.floors.authFloor.latency, p.floors.healthz.latency), 'ms', true),
    count(p.floors.authFloor.errors),
  );
  for (const o of r.overhead) {
    if (o.temporalPerRequest && o.latency === 0) {
      others = othersOf(o.others);
      row('profile: Temporal server per request', o.clients, '', temporalText(o.temporalPerRequest));
    }
  }
  const top = r.throughput.levels.reduce((a, b) => (b.rps > (a?.rps ?? 0) ? b : a), undefined);
  others = othersOf(top?.machine);
  if (top?.cpuMsPerRequest) {
    const c = top.cpuMsPerRequest;
    const total = sum(c, SERVICE_PROCESSES);
    row(
      'profile: CPU per request, all service processes',
      top.clients,
      '',
      `${fmt(total)} ms (net of idle)`,
      '',
      `ceiling ~${fmt((r.cpus * 1000) / total)} req/s on ${r.cpus} cores`,
    );
    for (const [k, v] of Object.entries(c).sort((a, b) => b[1] - a[1])) {
      if (v >= 0.05)
        row(
          `profile: CPU per request, ${k}`,
          top.clients,
          '',
          `${fmt(v)} ms`,
          '',
          SERVICE_PROCESSES.includes(k) ? pct(v / total) : 'not the service',
        );
    }
  }
  if (top?.databasePerRequest) {
    const d = top.databasePerRequest;
    row(
      'profile: PostgreSQL per request',
      top.clients,
      '',
      `${fmt(d.commits)} commits, ${fmt(d.writes)} rows written, ${fmt(d.walBytes / 1024)} KB WAL`,
    );
  }
  if (top?.temporalPerRequest)
    row('profile: Temporal server per request', top.clients, '', temporalText(top.temporalPerRequest));
  others = othersOf(p.load?.machine);
  for (const [role, prof] of Object.entries(p.profiles ?? {})) {
    if (!prof.families) continue;
    const families = prof.families
      .slice(0, 6)
      .map((f) => `${f.family} ${pct(f.share)}`)
      .join(', ');
    row(`profile: ${role} main thread CPU by code`, 8, '', families);
  }

  // Experiments: the same requests against private Temporal dev servers that differ in one setting.
  const private_ = r.experiments?.find((e) => e.name === 'private' && !e.error);
  const stackC1 = r.overhead.find((o) => o.latency === 0 && o.clients === 1);
  const stackC8 = r.throughput.levels.find((l) => l.clients === 8);
  for (const e of r.experiments ?? []) {
    others = '';
    if (e.error) {
      na(`experiment: ${e.label}`, e.error);
      continue;
    }
    const ref =
      e === private_
        ? { c1: stackC1?.api, c8: stackC8, name: 'stack server' }
        : { c1: private_?.c1.latency, c8: private_?.c8, name: 'private' };
    others = othersOf(e.c1.others);
    row(
      `experiment: ${e.label}`,
      1,
      e.c1.latency.n,
      triple(e.c1.latency),
      ref.c1 ? `${triple(ref.c1)} (${ref.name})` : '',
      triple(difference(e.c1.latency, ref.c1), 'ms', true),
      count(e.c1.errors),
    );
    others = othersOf(e.c8.others);
    row(
      `experiment: ${e.label}`,
      8,
      e.c8.latency.n,
      `${fmt(e.c8.rps)} req/s (p50 ${fmt(e.c8.latency.p50)}, p99 ${fmt(e.c8.latency.p99)} ms)`,
      ref.c8 ? `${fmt(ref.c8.rps)} req/s (${ref.name})` : '',
      ref.c8 ? `x${(e.c8.rps / ref.c8.rps).toFixed(2)}` : '',
      count(e.c8.errors),
    );
    if (e.c8.temporalPerRequest) {
      const cpu = e.c8.cpuMsPerRequest?.temporal;
      row(
        `experiment: ${e.name}, Temporal server per request`,
        8,
        '',
        `${temporalText(e.c8.temporalPerRequest)}${cpu !== undefined ? `; server CPU ${fmt(cpu)} ms` : ''}`,
      );
    }
    const dispatch = e.phases?.length ? summary(e.phases.map((x) => x.parts.activity_dispatch?.ms ?? 0)) : undefined;
    if (dispatch) row(`experiment: ${e.name}, activity dispatch phase`, 1, dispatch.n, triple(dispatch));
  }
  rows.push(
    ...targetRows(r).map((t) => ({ ...t, clients: String(t.clients), n: '', vsFloor: '', errors: '', others: '' })),
  );
  return rows;
}

/** The processes a request's CPU is counted over: the service's apps and the stack they need. */
const SERVICE_PROCESSES = ['api', 'worker', 'relay', 'projector', 'temporal', 'kafka', 'postgres'];
/** The floor's: its worker and the same stack (its client is the harness, as the service's is). */
const FLOOR_PROCESSES = ['floorWorker', 'temporal', 'kafka', 'postgres'];
const sum = (c, keys) => keys.reduce((a, k) => a + (c?.[k] ?? 0), 0);

/** Issue 16's targets against this run: measured, the target, and whether it is met. */
function targetRows(r) {
  const floor = r.floor;
  if (!floor) return [];
  const out = [];
  const target = (scenario, clients, value, limit, text, unit = '') =>
    out.push({
      scenario: `target: ${scenario}`,
      clients,
      measured: text,
      baseline: `<= ${fmt(limit)}${unit}`,
      vs: value === undefined ? 'not measured' : value <= limit ? 'met' : 'NOT met',
    });
  const atLeast = (scenario, clients, value, limit, text, unit = '') =>
    out.push({
      scenario: `target: ${scenario}`,
      clients,
      measured: text,
      baseline: `>= ${fmt(limit)}${unit}`,
      vs: value === undefined ? 'not measured' : value >= limit ? 'met' : 'NOT met',
    });
  const o1 = r.overhead.find((o) => o.latency === 0 && o.clients === 1);
  if (o1) {
    const p50 = o1.overhead.p50 / floor.c1.latency.p50;
    const p99 = o1.overhead.p99 / floor.c1.latency.p99;
    target(
      'overhead p50 / floor p50, 1 client, 0 ms model',
      1,
      p50,
      1.5,
      `x${p50.toFixed(2)} (${fmt(o1.overhead.p50)} / ${fmt(floor.c1.latency.p50)} ms)`,
    );
    target(
      'overhead p99 / floor p99, 1 client, 0 ms model',
      1,
      p99,
      2,
      `x${p99.toFixed(2)} (${fmt(o1.overhead.p99)} / ${fmt(floor.c1.latency.p99)} ms)`,
    );
  }
  const l8 = r.throughput.levels.find((l) => l.clients === 8);
  if (l8)
    atLeast(
      'completed req/s at 8 clients / floor',
      8,
      l8.rps / floor.c8.rps,
      0.7,
      `x${(l8.rps / floor.c8.rps).toFixed(2)} (${fmt(l8.rps)} / ${fmt(floor.c8.rps)} req/s)`,
    );
  const top = r.throughput.levels.reduce((a, b) => (b.rps > (a?.rps ?? 0) ? b : a), undefined);
  if (top?.cpuMsPerRequest) {
    const total = sum(top.cpuMsPerRequest, SERVICE_PROCESSES);
    target('CPU per request, all service processes', top.clients, total, 50, `${fmt(total)} ms`, ' ms');
  }
  const s0 = r.streaming.available ? r.streaming.rows.find((s) => s.latency === 0) : undefined;
  if (s0) {
    const behind = s0.overhead.p50 - floor.c1.latency.p50;
    target(
      'first token p50 behind the model, minus the floor p50',
      1,
      behind,
      10,
      `${signed(behind, 'ms')} (${fmt(s0.overhead.p50)} - ${fmt(floor.c1.latency.p50)} ms)`,
      ' ms',
    );
  }
  const leg2 = r.toolRound.leg2.overhead.p50 / floor.c1.latency.p50;
  target(
    'tool round leg 2 p50 / floor p50',
    1,
    leg2,
    1.2,
    `x${leg2.toFixed(2)} (${fmt(r.toolRound.leg2.overhead.p50)} / ${fmt(floor.c1.latency.p50)} ms)`,
  );
  const rss = r.memory.idle.worker;
  target('worker RSS at idle', '', rss, 250, `${fmt(rss)} MB`, ' MB');
  return out;
}

/** Frontend calls, and the history writes on a request's path with their mean time. */
function temporalText(t) {
  const writes = ['CreateWorkflowExecution', 'UpdateWorkflowExecution'];
  const n = writes.reduce((a, op) => a + (t.persistenceOpsByOperation[op] ?? 0), 0);
  const ms = writes.reduce((a, op) => a + (t.persistenceMsByOperation[op] ?? 0), 0);
  return `${fmt(t.frontendCalls)} frontend calls; ${fmt(n)} history writes of ${fmt(n ? ms / n : undefined)} ms each; ${fmt(t.persistenceOps)} persistence ops in all`;
}

/** Prints the table with a header naming the run and how busy the machine was with other work. */
export function printTable(rows, meta, write = (s) => process.stdout.write(s)) {
  const cols = [
    ['scenario', 'scenario'],
    ['clients', 'clients'],
    ['n', 'n'],
    ['measured', 'measured p50 / p95 / p99'],
    ['baseline', 'baseline p50 / p95 / p99'],
    ['vs', 'vs baseline'],
    ['vsFloor', 'vs Temporal floor'],
    ['errors', 'errors'],
    ['others', 'others'],
  ];
  const width = cols.map(([k, h]) => Math.max(h.length, ...rows.map((r) => r[k].length)));
  const line = (cells) =>
    cells
      .map((c, i) => (i === 1 || i === 2 ? c.padStart(width[i]) : c.padEnd(width[i])))
      .join('  ')
      .trimEnd();
  const busy = meta.otherLoad;
  const out = [
    '',
    `npm run bench${meta.mode === 'quick' ? ' --quick' : ''}: ${meta.date}, commit ${meta.commit}${meta.dirty ? ' + uncommitted changes' : ''}, ${meta.cpus} x ${meta.cpuModel}, node ${meta.node}, ${meta.durationS} s`,
    `scripted model at 0 ms and 200 ms; api, worker, projector from dist/ on task queue ${meta.taskQueue}; ${meta.projects} bench projects`,
    ...(busy
      ? [
          `other processes used ${pct(busy.otherShare)} of the machine's CPU during the scenarios${busy.top.length ? ` (busiest: ${busy.top.map((o) => `${o.command || o.name} ${pct(o.share)}`).join('; ')})` : ''}`,
          ...(busy.otherShare > 0.1
            ? ['WARNING: the machine was busy with other work (column "others"); absolute figures are inflated']
            : []),
        ]
      : []),
    '',
    line(cols.map(([, h]) => h)),
    line(width.map((w) => '-'.repeat(w))),
    ...rows.map((r) => line(cols.map(([k]) => r[k]))),
    '',
  ];
  write(out.join('\n') + '\n');
}
