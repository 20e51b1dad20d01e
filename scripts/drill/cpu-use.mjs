// Where the machine's CPU went over a window of the drill, by component: the benchmark's snapshot
// of /proc (scripts/bench/lib/procs.mjs: every process's CPU time and the machine's idle time),
// grouped by what each process's command line says it is (an app of dist/apps, PostgreSQL, Kafka,
// Temporal, HAProxy, the drill's harness and its noisy project). Linux only; elsewhere
// `cpuSnapshot` returns undefined and nothing is printed. A diagnostic for the noisy-neighbour
// phase (docs/reliability.md): a p99 that moves says that the service waited, this says behind whom.
import { cmdline, machineSnapshot } from '../bench/lib/procs.mjs';

function component(pid, comm) {
  const line = cmdline(pid);
  const app = /dist\/apps\/([a-z-]+)\//.exec(line);
  if (app) return app[1];
  if (line.includes('--noisy-project')) return 'noisy client';
  if (line.includes('scripts/drill/')) return 'drill harness';
  if (comm === 'postgres' || comm === 'postmaster') return 'postgres';
  if (line.includes('kafka.Kafka')) return 'kafka';
  if (/\btemporal\b.*\bserver\b/.test(line)) return 'temporal';
  if (comm === 'haproxy') return 'haproxy';
  return 'other';
}

/** Every process's CPU time so far and the machine's idle time, or undefined without /proc. */
export function cpuSnapshot() {
  try {
    return machineSnapshot();
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
  return `cores busy by component: ${parts.join(', ')}; idle ${((b.idleMs - a.idleMs) / 1000 / seconds).toFixed(2)} of the machine's cores`;
}
