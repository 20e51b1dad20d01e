// Child processes of the benchmark (model servers, api, worker, projector) and what /proc says
// about them and about the stack's processes: resident memory, CPU time, CPU time per thread.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { appendFileSync, createWriteStream, readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const TICK_MS = 10; // USER_HZ is 100 on Linux.

/** Starts `command args` with its output in `logFile`, its pid appended to `pidFile` for run.sh's trap. */
export function startProcess({ name, command, args, env, logFile, pidFile }) {
  const log = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  if (pidFile) appendFileSync(pidFile, `${child.pid}\n`);
  const proc = { name, child, pid: child.pid, logFile, exited: false, exitCode: undefined };
  child.on('exit', (code, signal) => {
    proc.exited = true;
    proc.exitCode = signal ?? code;
  });
  return proc;
}

/** Starts `node args` (see startProcess). */
export const startNode = (options) => startProcess({ ...options, command: process.execPath });

/** Polls `check` (sync or async) every 200 ms until it holds (one that throws counts as not yet); fails when
 * `proc` exits meanwhile or after `timeoutMs`, with the end of its log. */
export async function waitFor(what, timeoutMs, check, proc) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc?.exited)
      throw new Error(`${proc.name} exited (${proc.exitCode}) while waiting for ${what}:\n${tail(proc.logFile)}`);
    if (
      await Promise.resolve()
        .then(check)
        .catch(() => false)
    )
      return;
    await sleep(200);
  }
  throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${proc ? `:\n${tail(proc.logFile)}` : ''}`);
}

/** `count` free loopback TCP ports. */
export async function freePorts(count) {
  const servers = Array.from({ length: count }, () => createServer());
  const ports = await Promise.all(
    servers.map((s) => new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s.address().port)))),
  );
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when every process has exited. */
export async function stopAll(procs, graceMs = 15_000) {
  const alive = procs.filter((p) => p && !p.exited);
  for (const p of alive) p.child.kill('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (alive.some((p) => !p.exited) && Date.now() < deadline) await sleep(100);
  for (const p of alive) if (!p.exited) p.child.kill('SIGKILL');
  while (alive.some((p) => !p.exited) && Date.now() < deadline + 3000) await sleep(50);
}

/** The last lines of a log file (for a failure message). */
export function tail(file, lines = 30) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Resident set size in MB from /proc/<pid>/status, or undefined when the process is gone. */
/** Where a process's resident memory is (MB, from /proc/<pid>/smaps_rollup): anonymous (heaps,
 * native allocations) against file-backed (code, mapped files). */
export function rssPartsMb(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
    return { anonymous: kb('Anonymous') / 1024, file: (kb('Rss') - kb('Anonymous')) / 1024 };
  } catch {
    return undefined;
  }
}

export function rssMb(pid) {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** user+system CPU milliseconds of a /proc stat file (a process or one thread), and its name. */
function cpuOfStat(path) {
  try {
    const stat = readFileSync(path, 'utf8');
    const close = stat.lastIndexOf(')');
    const name = stat.slice(stat.indexOf('(') + 1, close);
    const f = stat.slice(close + 2).split(' ');
    return { name, ms: (Number(f[11]) + Number(f[12])) * TICK_MS };
  } catch {
    return undefined;
  }
}

export function cmdline(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/**
 * The processes whose CPU time the benchmark reports: ours by pid, the stack's by name
 * (temporal, every postgres backend, the Kafka JVM).
 */
export function componentsOf(own) {
  return () => {
    const groups = new Map();
    const add = (group, pid) => groups.set(group, [...(groups.get(group) ?? []), pid]);
    for (const [group, pids] of Object.entries(own)) for (const pid of pids) add(group, pid);
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = cpuOfStat(`/proc/${entry}/stat`);
      if (!stat) continue;
      if (stat.name === 'temporal') add('temporal', Number(entry));
      else if (stat.name === 'postgres') add('postgres', Number(entry));
      else if (stat.name === 'java' && cmdline(entry).includes('kafka.Kafka')) add('kafka', Number(entry));
    }
    return groups;
  };
}

/** CPU milliseconds per component now (processes listed by `components()`). */
export function cpuSnapshot(components) {
  const out = {};
  for (const [group, pids] of components()) {
    out[group] = pids.reduce((sum, pid) => sum + (cpuOfStat(`/proc/${pid}/stat`)?.ms ?? 0), 0);
  }
  out.harness = (process.cpuUsage().user + process.cpuUsage().system) / 1000;
  return out;
}

/**
 * The whole machine: busy CPU milliseconds (all cores, from /proc/stat) and every process's CPU
 * milliseconds, to tell how much of a window went to work outside the benchmark.
 */
export function machineSnapshot() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields;
  const processes = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = cpuOfStat(`/proc/${entry}/stat`);
    if (stat) processes.set(Number(entry), stat);
  }
  return {
    at: Date.now(),
    busyMs: (user + nice + system + irq + softirq + steal) * TICK_MS,
    idleMs: (idle + iowait) * TICK_MS,
    processes,
  };
}

/**
 * CPU of the machine between two snapshots: the share of all cores that was busy, and the share
 * used by anything but `ownPids` and the stack (temporal, postgres, kafka): the machine's busy
 * time minus ours, so processes that started and ended inside the window count too. The
 * busiest other processes still alive are named.
 */
export function otherLoad(a, b, ownPids) {
  const capacity = b.busyMs - a.busyMs + (b.idleMs - a.idleMs);
  const isOurs = (pid, stat) =>
    ownPids.has(pid) ||
    pid === process.pid ||
    stat.name === 'temporal' ||
    stat.name === 'postgres' ||
    (stat.name === 'java' && cmdline(pid).includes('kafka.Kafka'));
  let oursMs = 0;
  const others = [];
  for (const [pid, after] of b.processes) {
    const used = after.ms - (a.processes.get(pid)?.ms ?? 0);
    if (used <= 0) continue;
    if (isOurs(pid, after)) oursMs += used;
    else others.push({ pid, name: after.name, command: cmdline(pid).slice(0, 80).trim(), ms: used });
  }
  others.sort((x, y) => y.ms - x.ms);
  const otherMs = Math.max(0, b.busyMs - a.busyMs - oursMs);
  return {
    busyShare: capacity > 0 ? (b.busyMs - a.busyMs) / capacity : 0,
    otherShare: capacity > 0 ? otherMs / capacity : 0,
    top: others.slice(0, 3).map((o) => ({ ...o, share: capacity > 0 ? o.ms / capacity : 0 })),
  };
}

/** CPU milliseconds of each thread of a process, summed by thread name. */
export function threadCpu(pid) {
  const out = {};
  let tids = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    const stat = cpuOfStat(`/proc/${pid}/task/${tid}/stat`);
    if (stat) out[stat.name] = (out[stat.name] ?? 0) + stat.ms;
  }
  return out;
}

/** b - a for each key of two snapshots. */
export function delta(a, b) {
  const out = {};
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) out[key] = (b[key] ?? 0) - (a[key] ?? 0);
  return out;
}

/** Samples RSS of the named pids every `everyMs` until stopped; keeps the maximum per name. */
export function rssSampler(pids, everyMs = 250) {
  const max = {};
  const sample = () => {
    for (const [name, pid] of Object.entries(pids)) {
      const mb = rssMb(pid);
      if (mb !== undefined) max[name] = Math.max(max[name] ?? 0, mb);
    }
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return max;
    },
  };
}
