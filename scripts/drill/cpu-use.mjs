// Where the machine's CPU went over a window of the drill, by component: the benchmark's snapshot
// of /proc (scripts/bench/lib/procs.mjs: every process's CPU time and the machine's idle time),
// grouped by what each process's command line says it is (an app of dist/apps, PostgreSQL, Kafka,
// Temporal, HAProxy, the drill's harness and its noisy project). Linux only; elsewhere
// `cpuSnapshot` returns undefined and nothing is printed. A diagnostic for the noisy-neighbour
// phase (docs/reliability.md): a p99 that moves says that the service waited, this says behind whom.
// Beside it, how long each component's threads were ready to run but waited for a core (the
// scheduler's run delay, /proc/<pid>/task/<tid>/schedstat) and the share of the window in which
// any task on the machine waited for one (/proc/pressure/cpu, "some"), where the kernel has them.
import { readdirSync, readFileSync } from 'node:fs';
import { cmdline, machineSnapshot } from '../bench/lib/procs.mjs';

function component(pid, comm) {
  const line = cmdline(pid);
  const app = /dist\/apps\/([a-z-]+)\//.exec(line);
  if (app?.[1] === 'worker' && environ(pid).includes('TEMPORAL_WORKER_ROLE=long-activities')) return 'worker-long';
  if (app) return app[1];
  if (line.includes('--noisy-project')) return 'noisy client';
  if (line.includes('scripts/drill/')) return 'drill harness';
  if (comm === 'postgres' || comm === 'postmaster') return 'postgres';
  if (line.includes('kafka.Kafka')) return 'kafka';
  if (/\btemporal\b.*\bserver\b/.test(line)) return 'temporal';
  if (comm === 'haproxy') return 'haproxy';
  return 'other';
}

/** A process's environment as one string (NUL-separated), or '' when it cannot be read. */
function environ(pid) {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1');
  } catch {
    return '';
  }
}

/** Every process's CPU time so far and the machine's idle time, or undefined without /proc; with
 * each process's run delay so far (ms, summed over its live threads) and the machine's CPU pressure
 * (µs) where the kernel keeps them. */
export function cpuSnapshot() {
  try {
    const snapshot = machineSnapshot();
    const waits = new Map();
    for (const pid of snapshot.processes.keys()) {
      const ms = runDelayMs(pid);
      if (ms !== undefined) waits.set(pid, ms);
    }
    return { ...snapshot, waits, pressureUs: cpuPressureUs() };
  } catch {
    return undefined;
  }
}

/** A process's time ready to run but waiting for a core, summed over its threads (ms). */
function runDelayMs(pid) {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`))
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]) || 0;
    return ns / 1e6;
  } catch {
    return undefined;
  }
}

/** The machine's total time with at least one task waiting for a core (µs), if PSI is on. */
function cpuPressureUs() {
  try {
    return Number(/^some .*total=(\d+)/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'))?.[1]);
  } catch {
    return undefined;
  }
}

/** `a` to `b` as one line: each component's share of one core over the window, largest first, and
 * the machine's idle cores. Processes that started in the window count from zero; those that ended
 * in it are not counted. */
export function cpuUse(a, b) {
  if (!a || !b) return undefined;
  const seconds = (b.at - a.at) / 1000;
  const used = new Map();
  for (const [pid, after] of b.processes) {
    const ms = after.ms - (a.processes.get(pid)?.ms ?? 0);
    if (ms <= 0) continue;
    const name = component(pid, after.name);
    used.set(name, (used.get(name) ?? 0) + ms / 1000);
  }
  const parts = [...used]
    .filter(([, s]) => s / seconds >= 0.005)
    .sort((x, y) => y[1] - x[1])
    .map(([name, s]) => `${name} ${(s / seconds).toFixed(2)}`);
  const waited = new Map();
  for (const [pid, after] of b.waits ?? []) {
    const ms = after - (a.waits?.get(pid) ?? 0);
    if (ms <= 0) continue;
    const name = component(pid, b.processes.get(pid)?.name);
    waited.set(name, (waited.get(name) ?? 0) + ms);
  }
  const waits = [...waited]
    .filter(([, ms]) => ms / seconds >= 1)
    .sort((x, y) => y[1] - x[1])
    .map(([name, ms]) => `${name} ${(ms / seconds).toFixed(0)}`);
  const pressure =
    Number.isFinite(a.pressureUs) && Number.isFinite(b.pressureUs)
      ? `; some task waited for a core ${((b.pressureUs - a.pressureUs) / 10 / (b.at - a.at)).toFixed(0)}% of the time`
      : '';
  return (
    `cores busy by component: ${parts.join(', ')}; idle ${((b.idleMs - a.idleMs) / 1000 / seconds).toFixed(2)} of the machine's cores` +
    (waits.length ? `; ms a second its threads waited for a core: ${waits.join(', ')}` : '') +
    pressure
  );
}
