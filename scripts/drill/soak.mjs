// The soak (`npm run drill -- --soak <minutes>`): mixed load over many projects (one-shot requests,
// tool rounds, sessions, streams, cancels, background runs; mixed-load.mjs) for a long time, with
// every app's resident memory sampled. Afterwards the apps idle for a minute. It holds when every
// scenario got its expected answers, the money invariant is exact over every project, and no app's
// RSS grew after warm-up: the median of the last fifth of the run is within RSS_GROWTH_BOUND of the
// median of the fifth right after warm-up (the first fifth).
import { setTimeout as sleep } from 'node:timers/promises';
import { rssMb } from '../bench/lib/procs.mjs';
import { percentile } from '../bench/lib/stats.mjs';
import { moneyProblems, ProjectClient, SCENARIOS } from './mixed-load.mjs';

const RSS_GROWTH_BOUND = 0.1;
const SAMPLE_EVERY_MS = 15_000;
const CREDITS = 1_000_000;

/**
 * @param {{ minutes: number, projects: number, apps: { label: string, proc: { child: { pid: number } } }[], apis: object[], accounts: object, db: object, usage: object, agent: object, log: (s: string) => void, newProject: (i: number) => Promise<{ id: string, key: string }> }} options
 */
export async function soak({ minutes, projects: n, apps, apis, db, usage, agent, log, newProject }) {
  const clients = [];
  for (let i = 0; i < n; i++) {
    const p = await newProject(i, CREDITS);
    clients.push(new ProjectClient({ agent, apis, key: p.key, projectId: p.id }));
  }
  const samples = []; // { at (0..1 of the run), rss: { label: MB } }
  const began = performance.now();
  const durationMs = minutes * 60_000;
  const sample = () => {
    const rss = Object.fromEntries(apps.map((a) => [a.label, rssMb(a.proc.child.pid)]));
    samples.push({ at: (performance.now() - began) / durationMs, rss });
  };
  sample();
  const timer = setInterval(sample, SAMPLE_EVERY_MS);
  const counts = Object.fromEntries(SCENARIOS.map((s) => [s, 0]));
  let running = true;
  const loops = clients.map(async (client, i) => {
    for (let k = i; running; k++) {
      const kind = SCENARIOS[k % SCENARIOS.length];
      await client.run(kind);
      counts[kind]++;
      await sleep(2000); // each project stays under its 60 requests a minute
    }
  });
  const progress = setInterval(
    () =>
      log(
        `soak: ${((performance.now() - began) / 60_000).toFixed(1)} of ${minutes} min, ${Object.values(counts).reduce((a, b) => a + b, 0)} scenarios`,
      ),
    60_000,
  );
  await sleep(durationMs);
  running = false;
  await Promise.all(loops);
  clearInterval(progress);
  clearInterval(timer);
  sample();
  log('soak: load stopped; the apps idle for a minute');
  await sleep(60_000);
  const idle = Object.fromEntries(apps.map((a) => [a.label, rssMb(a.proc.child.pid)]));

  const problems = clients.flatMap((c) => c.problems.map((p) => `soak client: ${p}`));
  const median = (from, to, label) =>
    percentile(
      samples.filter((s) => s.at >= from && s.at <= to && s.rss[label] !== undefined).map((s) => s.rss[label]),
      50,
    );
  const rss = apps.map((a) => {
    const afterWarmUp = median(0.2, 0.4, a.label);
    const end = median(0.8, 1.01, a.label);
    const growth = afterWarmUp && end ? end / afterWarmUp - 1 : undefined;
    if (growth === undefined) problems.push(`${a.label}: not enough RSS samples`);
    else if (growth > RSS_GROWTH_BOUND)
      problems.push(
        `${a.label}: RSS grew ${(growth * 100).toFixed(0)}% after warm-up (${afterWarmUp.toFixed(0)} -> ${end.toFixed(0)} MB)`,
      );
    return {
      app: a.label,
      start: samples[0].rss[a.label],
      afterWarmUp,
      end,
      growth,
      idle: idle[a.label],
      max: Math.max(...samples.map((s) => s.rss[a.label] ?? 0)),
    };
  });
  const money = await moneyProblems({
    db,
    usage,
    projects: clients.map((c) => ({ id: c.projectId, told: c.told })),
    added: CREDITS,
  });
  problems.push(...money.problems);
  const calls = clients.reduce((x, c) => x + c.calls, 0);
  const retries = clients.reduce((x, c) => x + c.retries, 0);
  return {
    minutes,
    projects: n,
    counts,
    calls,
    retries,
    charges: money.charges,
    credits: money.credits,
    rss,
    problems,
  };
}

export function printSoak(result, write = (s) => process.stdout.write(s)) {
  const mb = (x) => (x === undefined ? 'n/a' : x.toFixed(0));
  const lines = [
    `soak: ${result.minutes} min over ${result.projects} projects; scenarios ${Object.entries(result.counts)
      .map(([k, v]) => `${k} ${v}`)
      .join(
        ', ',
      )}; ${result.calls} calls (${result.retries} retried); ${result.charges} charges, ${result.credits} credits`,
    '',
    '| app | RSS at start MB | after warm-up MB | at the end MB | growth | idle after MB | max MB |',
    '|---|---|---|---|---|---|---|',
    ...result.rss.map(
      (r) =>
        `| ${r.app} | ${mb(r.start)} | ${mb(r.afterWarmUp)} | ${mb(r.end)} | ${r.growth === undefined ? 'n/a' : `${(r.growth * 100).toFixed(1)}%`} | ${mb(r.idle)} | ${mb(r.max)} |`,
    ),
    '',
  ];
  write(`${lines.join('\n')}\n`);
}
