// The noisy-neighbour phase of `npm run drill` (DESIGN.md section 10, "one tenant cannot hurt
// another"): a well-behaved project's one-shot latency is measured alone, then again while a noisy
// project pushes at every limit at once:
// - streams held open (long streamed answers, the scripted model's 10 ms a word),
// - runs in flight (requests paused for tool outputs that are never answered),
// - large input files (8 files of 1 MB a request),
// - hostile PDFs (a 1 MB decompression bomb that read_file is asked to read),
// - large bodies without credentials (7 MB to /v1/agent and /codec/decode, not rate limited),
// each authenticated kind paced to share the project's 60 requests a minute and pressing on after a
// refusal without waiting for Retry-After. The noisy project runs in a child process of its own at
// the lowest CPU priority (the idle scheduling class, else nice 19): on 2 cores the load generator's own CPU (7 MB bodies as fast
// as they are refused) would otherwise be counted against the service, where a real noisy tenant
// sends from machines of its own. DRILL_NOISY_NICE=0 runs it at the harness's priority. Its stop is
// bounded: a noisy client that does not stop in time is a problem of the phase, with a diagnostic
// report of where it stood (never a hang).
// The phase holds when the well-behaved project got no
// error and the money invariant holds over both projects; the p99 ratio (target < 1.2) is printed
// as a figure, not checked: timing is measured, never asserted (docs/testing.md, "Timing"). Beside it, its
// 95% bootstrap interval: with --quick's 20 s windows (about 100 samples each) two windows of the
// same load differ by up to x1.6 (docs/reliability-history.md, session 16), so only the long windows of
// the full drill (300 s, --noisy-seconds) can tell whether the p99 moved by less than 20%.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { jsonOf, keepAliveAgent, parseSseBlock, send } from '../bench/lib/http.mjs';
import { pairedRatio, percentile, summary } from '../bench/lib/stats.mjs';
import { findMetricsUrl, scrape, temporalPid } from '../bench/lib/temporal-metrics.mjs';
import { openTemporal, phaseTable } from '../bench/lib/temporal-phases.mjs';
import { cpuSnapshot, cpuUse } from './cpu-use.mjs';
import { deflateRepeated, pdfWithContent } from '../../test/support/hostile-pdf.mjs';
import { lookup, moneyProblems, ProjectClient } from './mixed-load.mjs';

const CREDITS = 1_000_000;

/** About 600 KB of PDF (under the 1 MB a file may have as base64) whose one page draws a glyph 60
 * million times (420 MB of drawing commands). */
const pdfBomb = async () =>
  pdfWithContent(await deflateRepeated('BT /F1 12 Tf 72 712 Td ', '(a) Tj ', 60_000_000, 'ET'));

/** How often the well-behaved load sends, and over how many projects: one every 200 ms over six
 * keeps each project at 50 a minute, under its rate limit of 60, and gives a 20 s window about 100
 * samples (51 before session 14, when the p99 was the slowest one or two). */
const WELL_BEHAVED_EVERY_MS = 200;
const WELL_BEHAVED_PROJECTS = 6;

/** The well-behaved load: one-shot requests, rotating over `clients`, one at a time; returns
 * their latencies and any problem. */
async function wellBehaved(clients, ms, samples = []) {
  const latencies = [];
  const until = performance.now() + ms;
  for (let i = 0; performance.now() < until; i++) {
    const client = clients[i % clients.length];
    const began = performance.now();
    const res = await client.run('one-shot');
    if (res?.status === 200) {
      latencies.push(performance.now() - began);
      samples.push({ id: res.json.id, sentAt: began, receivedAt: performance.now() });
    }
    await sleep(Math.max(0, WELL_BEHAVED_EVERY_MS - (performance.now() - began)));
  }
  return latencies;
}

/** The Temporal dev server's persistence (SQLite, one writer) between two scrapes: operations and
 * their mean time; undefined where its metrics cannot be read. */
async function temporalPersistence() {
  const pid = temporalPid();
  const url = pid === undefined ? undefined : await findMetricsUrl(pid);
  if (!url) return undefined;
  const before = await scrape(url);
  return async () => {
    const after = await scrape(url);
    const sum = (metric) =>
      [...after].reduce((x, [key, v]) => (key.startsWith(`${metric}|`) ? x + v - (before.get(key) ?? 0) : x), 0);
    const ops = sum('persistence_requests');
    return `Temporal's persistence ${ops} operations, ${ops ? ((sum('persistence_latency_sum') * 1000) / ops).toFixed(2) : '-'} ms each`;
  };
}

/** Where the well-behaved requests spent their time in each window, read from their workflow
 * histories (scripts/bench/lib/temporal-phases.mjs): each part's p50/p95/max alone and beside the
 * noisy project, so that the part which grew is named; then the slowest few beside it, part by part
 * (those over 5 ms). */
async function logParts(aloneSamples, besideSamples, log, slowestCount = 5) {
  let temporal;
  try {
    temporal = await openTemporal({
      address: process.env.TEMPORAL_ADDRESS,
      namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
    });
    const alone = await temporal.phases(aloneSamples, 60_000);
    const beside = await temporal.phases(besideSamples, 60_000);
    const tables = [phaseTable(alone, summary), phaseTable(beside, summary)];
    const figures = (part) => (part?.n ? `${part.p50.toFixed(0)}/${part.p95.toFixed(0)}/${part.max.toFixed(0)}` : '-');
    log(
      `noisy neighbour: where the well-behaved requests' time went, p50/p95/max ms alone (${alone.length} histories) -> beside (${beside.length}):`,
    );
    for (const part of tables[1]) {
      const before = tables[0].find((p) => p.key === part.key);
      log(`noisy neighbour:   ${part.label}: ${figures(before)} -> ${figures(part)}`);
    }
    const slowest = [...beside].sort((x, y) => y.total - x.total).slice(0, slowestCount);
    for (const p of slowest) {
      const parts = Object.values(p.parts)
        .filter((part) => part.ms >= 5)
        .map((part) => `${part.label} ${part.ms.toFixed(0)}`);
      log(`noisy neighbour: a slow one beside it, ${p.total.toFixed(0)} ms: ${parts.join('; ')}`);
    }
  } catch (e) {
    log(`noisy neighbour: the requests' histories could not be read (${e instanceof Error ? e.message : e})`);
  } finally {
    await temporal?.close();
  }
}

/** The noisy project, in this child process: every kind of pressure at once until the harness
 * says stop; then it sends its answers by code and the credits it was told. */
async function noisyProcess({ apiUrl, key, projectId }) {
  const agent = keepAliveAgent(64);
  const client = new ProjectClient({ agent, apis: [{ url: apiUrl }], key, projectId });
  const bomb = await pdfBomb();
  let running = true;
  process.once('message', () => (running = false));
  const answers = new Map();
  const count = (res) => {
    const code = res.status === 200 ? 200 : `${res.status} ${res.json?.error?.code ?? res.error ?? ''}`.trim();
    answers.set(code, (answers.get(code) ?? 0) + 1);
  };
  const once = { deadlineMs: 0 }; // no retry: a refusal is counted and the loop presses on
  const told = (res) => {
    count(res);
    if (res.status === 200) client.tell(res.json.id, res.json.usage.credits_this_request);
  };
  const longMessage = Array.from({ length: 3000 }, (_, i) => `w${i}`).join(' '); // ~30 s streamed
  const megabyte = 'x'.repeat(1_000_000);
  const kinds = [
    // [name, pause between sends, one send]
    [
      'streams',
      3000,
      async () => {
        const res = await client.call('POST', '/v1/agent', {
          ...once,
          body: { message: longMessage, capabilities: ['chat'], stream: true },
          sse: { isToken: () => false },
          timeoutMs: 120_000,
        });
        count(res);
        const done =
          res.status === 200
            ? res.body
                .split(/\r?\n\r?\n/)
                .map(parseSseBlock)
                .find((e) => e?.event === 'done')
            : undefined;
        if (done) client.tell(String(res.headers['x-request-id']), done.json.usage.credits_this_request);
      },
    ],
    [
      'runs',
      3000,
      async () =>
        told(
          await client.call('POST', '/v1/agent', {
            ...once,
            body: { message: 'lookup {"q":"hold"}', tools: [lookup] },
          }),
        ),
    ],
    [
      'files',
      6000,
      async () => {
        const files = Array.from({ length: 8 }, (_, i) => ({ name: `big-${i}.txt`, content: megabyte }));
        told(
          await client.call('POST', '/v1/agent', {
            ...once,
            body: { message: 'big files', capabilities: ['chat'], files },
          }),
        );
      },
    ],
    [
      'pdfs',
      6000,
      async () =>
        told(
          await client.call('POST', '/v1/agent', {
            ...once,
            body: {
              message: 'read_file {"name":"bomb.pdf"}',
              capabilities: ['documents'],
              files: [{ name: 'bomb.pdf', content: bomb.toString('base64') }],
            },
          }),
        ),
    ],
  ];
  // ~7 MB of small objects, encoded once: a real flood's sender pays for its bytes on machines of
  // its own, so this process must not spend a core re-encoding them for every send.
  const bigBody = Buffer.from(
    JSON.stringify({ message: 'x', filler: Array.from({ length: 350_000 }, () => ({ a: 1 })) }),
  );
  // DRILL_NOISY_KINDS (a diagnostic: streams,runs,files,pdfs,unauthenticated) keeps only those
  // kinds, to measure what each costs the well-behaved project on its own; `none` keeps none, to
  // measure the phase's own noise (two windows of the same load). Default: all at once.
  const chosen = process.env.DRILL_NOISY_KINDS?.split(',');
  const loops = kinds
    .filter(([name]) => !chosen || chosen.includes(name))
    .map(([, pauseMs, fn]) =>
      (async () => {
        const inFlight = new Set();
        while (running) {
          const p = fn().catch(() => undefined);
          inFlight.add(p);
          void p.finally(() => inFlight.delete(p));
          await sleep(pauseMs);
        }
        await Promise.all(inFlight);
      })(),
    );
  for (const path of !chosen || chosen.includes('unauthenticated') ? ['/v1/agent', '/codec/decode'] : [])
    loops.push(
      (async () => {
        while (running) {
          const res = await send({ agent, url: `${apiUrl}${path}`, body: bigBody, timeoutMs: 30_000 });
          count({ ...res, json: jsonOf(res) });
          // A send that fails locally (no file descriptor, no port) fails within the same tick:
          // without a pause this loop would never yield, and the stop message would never be read.
          if (res.status === 0) await sleep(100);
        }
      })(),
    );
  // Whatever the kinds (none included), the answer goes only once the harness says stop.
  loops.push(
    (async () => {
      while (running) await sleep(100);
    })(),
  );
  await Promise.all(loops);
  agent.destroy();
  // Exits once the answer is sent: nothing left open (a socket, a timer) can keep it alive.
  process.send({ answers: Object.fromEntries(answers), told: [...client.told], problems: client.problems }, () =>
    process.exit(0),
  );
}

/** `48/97`: p50/p99 of latencies, in whole ms. */
const summaryText = (xs) => `${(percentile(xs, 50) ?? NaN).toFixed(0)}/${(percentile(xs, 99) ?? NaN).toFixed(0)}`;

/** `x1.46 (95% interval x1.02-x2.31)`: the p99 ratio and how far its samples let it be trusted. */
export function ratioText({ p99Ratio, p99Interval: [lo, hi] }) {
  return `x${p99Ratio.toFixed(2)} (95% interval x${lo.toFixed(2)}-x${hi.toFixed(2)})`;
}

/** The longest a noisy send may take (a stream's 120 s), and then some. */
const STOP_MS = 150_000;

/** Starts the noisy project's process; `stop()` ends it and returns what it saw, or `undefined` with
 * a diagnostic report in `runDir` when it did not stop within STOP_MS. */
function noisy(options, runDir) {
  const node = [
    process.execPath,
    '--report-on-signal',
    '--report-signal=SIGUSR2',
    `--report-directory=${runDir}`,
    fileURLToPath(import.meta.url),
    '--noisy-project',
  ];
  // Started under its priority, so every thread of it has it (a priority set after the start
  // reaches only the main thread; V8's and libuv's threads already run): Linux's idle scheduling
  // class where chrt is, which runs only on a core nothing else wants, else nice 19.
  const lowest = existsSync('/usr/bin/chrt') ? ['chrt', '--idle', '0'] : ['nice', '-n', '19'];
  const [command, ...args] = process.env.DRILL_NOISY_NICE === '0' ? node : [...lowest, ...node];
  const child = spawn(command, args, {
    env: { ...process.env, DRILL_NOISY_PROJECT: JSON.stringify(options) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const result = once(child, 'message');
  const exited = once(child, 'exit');
  return {
    async stop() {
      child.send('stop');
      const [r] = (await Promise.race([result, sleep(STOP_MS)])) ?? [];
      if (r === undefined) {
        child.kill('SIGUSR2');
        await sleep(3000);
      }
      if (!(await Promise.race([exited.then(() => true), sleep(5000)]))) child.kill('SIGKILL');
      await exited;
      return r;
    },
  };
}

if (process.argv[2] === '--noisy-project') await noisyProcess(JSON.parse(process.env.DRILL_NOISY_PROJECT));

/**
 * `rounds` (1 unless --noisy-rounds) alternates the two windows that many times, each round against
 * its own "alone" window, and the figure is the rounds' geometric mean with its interval
 * (pairedRatio): more samples than one pair of windows, and a drift of the baseline over the run
 * (a database that grows) kept out of the ratio.
 * @param {{ quick: boolean, windowSeconds?: number, rounds?: number, apis: { url: string }[], db: object, usage: object, agent: object, log: (s: string) => void, newProject: (i: number, credits: number) => Promise<{ id: string, key: string }>, runDir: string, caughtUp: () => Promise<number> }} options
 */
export async function noisyNeighbour({
  quick,
  windowSeconds,
  rounds = 1,
  apis,
  db,
  usage,
  agent,
  log,
  newProject,
  runDir,
  caughtUp,
}) {
  const windowMs = (windowSeconds ?? (quick ? 20 : 300)) * 1000;
  const quiet = [];
  for (let i = 0; i < WELL_BEHAVED_PROJECTS; i++) {
    const p = await newProject(`quiet-${i}`, CREDITS);
    quiet.push(new ProjectClient({ agent, apis, key: p.key, projectId: p.id }));
  }
  const n = await newProject('noisy', CREDITS);
  const loud = new ProjectClient({ agent, apis, key: n.key, projectId: n.id });

  // Measured only once the drill's consumers (a projector that replays the topic from its start
  // first of all) have nothing left to read: their catching up would be counted in "alone".
  const began = Date.now();
  const unread = await caughtUp();
  log(
    unread === 0
      ? `noisy neighbour: the consumers caught up in ${((Date.now() - began) / 1000).toFixed(1)} s`
      : `noisy neighbour: the consumers still had ${unread} messages to read after ${((Date.now() - began) / 1000).toFixed(0)} s; measuring anyway`,
  );
  await wellBehaved(quiet, 5_000); // warm-up
  const windows = [];
  const seen = { answers: {}, told: [], problems: [] };
  for (let round = 1; round <= rounds; round++) {
    const of = rounds > 1 ? ` (round ${round} of ${rounds})` : '';
    log(`noisy neighbour: the well-behaved projects alone${of}`);
    let cpu = cpuSnapshot();
    let persistence = await temporalPersistence();
    const w = { aloneSamples: [], besideSamples: [] };
    w.alone = await wellBehaved(quiet, windowMs, w.aloneSamples);
    w.cpuAlone = cpuUse(cpu, cpuSnapshot());
    w.persistenceAlone = await persistence?.();
    log(`noisy neighbour: the same with the noisy project at every limit${of}`);
    const pressure = noisy({ apiUrl: apis[0].url, key: n.key, projectId: n.id }, runDir);
    await sleep(10_000);
    cpu = cpuSnapshot();
    persistence = await temporalPersistence();
    w.beside = await wellBehaved(quiet, windowMs, w.besideSamples);
    w.cpuBeside = cpuUse(cpu, cpuSnapshot());
    w.persistenceBeside = await persistence?.();
    const stopped = (await pressure.stop()) ?? {
      answers: {},
      told: [],
      problems: [`its client did not stop within ${STOP_MS / 1000} s (a diagnostic report is in ${runDir})`],
    };
    for (const [status, k] of Object.entries(stopped.answers)) seen.answers[status] = (seen.answers[status] ?? 0) + k;
    seen.told.push(...stopped.told);
    seen.problems.push(...stopped.problems);
    if (rounds > 1) {
      const { ratio, interval } = pairedRatio([[w.alone, w.beside]], 99);
      log(
        `noisy neighbour: round ${round}: p50/p99 alone ${summaryText(w.alone)} ms, beside ${summaryText(w.beside)} ms: p99 ${ratioText({ p99Ratio: ratio, p99Interval: interval })}`,
      );
    }
    windows.push(w);
  }
  for (const [id, credits] of seen.told) loud.tell(id, credits);

  const problems = quiet.flatMap((c) => c.problems.map((p) => `well-behaved project: ${p}`));
  problems.push(...seen.problems.map((p) => `noisy project: ${p}`));
  const errors = quiet.reduce(
    (x, c) => x + [...c.statuses].filter(([s]) => s !== 200).reduce((y, [, k]) => y + k, 0),
    0,
  );
  if (errors) problems.push(`the well-behaved projects got ${errors} answer(s) other than 200`);
  const money = await moneyProblems({
    db,
    usage,
    projects: [...quiet, loud].map((c) => ({ id: c.projectId, told: c.told })),
    added: CREDITS,
  });
  problems.push(...money.problems);
  const p = (xs, q) => percentile(xs, q) ?? NaN;
  const alone = windows.flatMap((w) => w.alone);
  const beside = windows.flatMap((w) => w.beside);
  const pairs = windows.map((w) => [w.alone, w.beside]);
  const p99 = pairedRatio(pairs, 99);
  const figures = {
    alone: { n: alone.length, p50: p(alone, 50), p99: p(alone, 99) },
    beside: { n: beside.length, p50: p(beside, 50), p99: p(beside, 99) },
    noisyAnswers: seen.answers,
    cpu: windows.map((w) => ({ alone: w.cpuAlone, beside: w.cpuBeside })),
    rounds,
    p99Ratio: p99.ratio,
    p99Interval: p99.interval,
    p50Ratio: pairedRatio(pairs, 50).ratio,
  };
  log(
    `noisy neighbour: well-behaved one-shot p50/p99 alone ${figures.alone.p50.toFixed(0)}/${figures.alone.p99.toFixed(0)} ms (n ${figures.alone.n}), beside the noisy project ${figures.beside.p50.toFixed(0)}/${figures.beside.p99.toFixed(0)} ms (n ${figures.beside.n}): p99 ${ratioText(figures)}${rounds > 1 ? ` over ${rounds} rounds` : ''} (target < 1.20); the noisy project's answers ${JSON.stringify(figures.noisyAnswers)}`,
  );
  for (const [i, w] of windows.entries()) {
    const of = rounds > 1 ? ` (round ${i + 1})` : '';
    if (w.cpuAlone) log(`noisy neighbour: alone${of}, ${w.cpuAlone}`);
    if (w.cpuBeside) log(`noisy neighbour: beside the noisy project${of}, ${w.cpuBeside}`);
    if (w.persistenceAlone && w.persistenceBeside)
      log(`noisy neighbour: ${w.persistenceAlone} alone; ${w.persistenceBeside} beside the noisy project${of}`);
  }
  await logParts(
    windows.flatMap((w) => w.aloneSamples),
    windows.flatMap((w) => w.besideSamples),
    log,
  );
  return { figures, problems };
}
