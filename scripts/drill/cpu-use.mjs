// Where the machine's CPU went over a window of the drill, by component: each process's user and
// system time from /proc/<pid>/stat, grouped by what its command line says it is (an app of
// dist/apps, PostgreSQL, Kafka, Temporal, HAProxy, the drill's harness and its noisy project), and
// the machine's idle time from /proc/stat. Linux only; elsewhere `cpuSnapshot` returns undefined
// and nothing is printed. A diagnostic for the noisy-neighbour phase (docs/reliability.md): a p99
// that moves says that the service waited, this says behind whom.
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks a second (USER_HZ): 100 on every Linux architecture Node runs on. */
const TICKS = 100;

function component(cmdline, comm) {
  const app = /dist\/apps\/([a-z-]+)\//.exec(cmdline);
  if (app) return app[1];
  if (cmdline.includes('--noisy-project')) return 'noisy client';
  if (cmdline.includes('scripts/drill/')) return 'drill harness';
  if (comm === 'postgres' || comm === 'postmaster') return 'postgres';
  if (cmdline.includes('kafka.Kafka')) return 'kafka';
  if (/\btemporal\b.*\bserver\b/.test(cmdline)) return 'temporal';
  if (comm === 'haproxy') return 'haproxy';
  return 'other';
}

/** CPU seconds used so far by each component's live processes, and the machine's idle seconds. */
export function cpuSnapshot() {
  let stat;
  try {
    stat = readFileSync('/proc/stat', 'utf8');
  } catch {
    return undefined;
  }
  const cpu = stat.split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const byPid = new Map();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // comm is in parentheses and may hold spaces; the fields after it are space-separated.
      const comm = s.slice(s.indexOf('(') + 1, s.lastIndexOf(')'));
      const fields = s.slice(s.lastIndexOf(')') + 2).split(' ');
      const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      byPid.set(pid, { name: component(cmdline, comm), seconds: ticks / TICKS });
    } catch {
      // The process ended while being read.
    }
  }
  return { at: performance.now(), idle: (cpu[3] + (cpu[4] ?? 0)) / TICKS, byPid };
}

/** `a` to `b` as one line: each component's share of one core over the window, largest first, and
 * the machine's idle cores. Processes that started in the window count from zero; those that ended
 * in it are not counted. */
export function cpuUse(a, b) {
  if (!a || !b) return undefined;
  const seconds = (b.at - a.at) / 1000;
  const used = new Map();
  for (const [pid, { name, seconds: s }] of b.byPid) {
    const before = a.byPid.get(pid)?.seconds ?? 0;
    used.set(name, (used.get(name) ?? 0) + Math.max(0, s - before));
  }
  const parts = [...used]
    .filter(([, s]) => s / seconds >= 0.005)
    .sort((x, y) => y[1] - x[1])
    .map(([name, s]) => `${name} ${(s / seconds).toFixed(2)}`);
  return `cores busy by component: ${parts.join(', ')}; idle ${((b.idle - a.idle) / seconds).toFixed(2)} of the machine's cores`;
}
