// The Temporal server's own Prometheus counters, read before and after a window: how many gRPC
// calls the apps made to its frontend per request (by operation), and how many persistence
// operations (SQLite writes and reads in the dev server) each request cost, with their time.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { send } from './http.mjs';

/** Loopback TCP ports a process listens on (from /proc, no tools needed). */
function listeningPorts(pid) {
  const inodes = new Set();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]);
      } catch {
        // The descriptor closed meanwhile.
      }
    }
  } catch {
    return [];
  }
  const ports = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let lines = [];
    try {
      lines = readFileSync(table, 'utf8').trim().split('\n').slice(1);
    } catch {
      continue;
    }
    for (const line of lines) {
      const f = line.trim().split(/\s+/);
      // f[1] local address "0100007F:1F90", f[3] state (0A = LISTEN), f[9] inode.
      if (f[3] === '0A' && inodes.has(f[9])) ports.push(parseInt(f[1].split(':')[1], 16));
    }
  }
  return ports;
}

/** The /metrics URL of a running Temporal server process, or undefined. */
export async function findMetricsUrl(pid) {
  for (const port of listeningPorts(pid)) {
    const url = `http://127.0.0.1:${port}/metrics`;
    const r = await send({ method: 'GET', url, timeoutMs: 2000 });
    if (r.status === 200 && r.body.startsWith('# HELP')) return url;
  }
  return undefined;
}

/** The pid of the process named `temporal` (the stack's dev server), if exactly one. */
export function temporalPid() {
  const pids = readdirSync('/proc').filter((e) => {
    if (!/^\d+$/.test(e)) return false;
    try {
      return (
        readFileSync(`/proc/${e}/comm`, 'utf8').trim() === 'temporal' &&
        readFileSync(`/proc/${e}/cmdline`, 'utf8').includes('start-dev')
      );
    } catch {
      return false;
    }
  });
  return pids.length >= 1 ? Number(pids[0]) : undefined;
}

const LINE =
  /^(service_requests|service_latency_sum|persistence_requests|persistence_latency_sum)\{([^}]*)\} ([0-9.eE+-]+)$/;

/** The counters of interest, summed by (metric, operation); frontend calls only for service_*. */
export async function scrape(url) {
  const r = await send({ method: 'GET', url, timeoutMs: 5000 });
  if (r.status !== 200) throw new Error(`GET ${url} answered ${r.status}`);
  const out = new Map();
  for (const line of r.body.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (m[1].startsWith('service_') && labels.service_name !== 'frontend') continue;
    const key = `${m[1]}|${labels.operation ?? '?'}`;
    out.set(key, (out.get(key) ?? 0) + Number(m[3]));
  }
  return out;
}

/**
 * Per request between two scrapes: frontend calls by operation, persistence operations by
 * operation, and persistence time (ms). Long polls are counted but their time is waiting.
 */
export function perRequest(before, after, requests) {
  const d = (key) => (after.get(key) ?? 0) - (before.get(key) ?? 0);
  const ops = (metric, scale = 1) => {
    const byOp = {};
    for (const key of after.keys()) {
      const [name, op] = key.split('|');
      if (name !== metric) continue;
      const v = (d(key) * scale) / requests;
      if (v >= 0.05) byOp[op] = v;
    }
    return Object.fromEntries(Object.entries(byOp).sort((a, b) => b[1] - a[1]));
  };
  const rpcs = ops('service_requests');
  const persistence = ops('persistence_requests');
  const persistenceMs = ops('persistence_latency_sum', 1000);
  const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);
  return {
    requests,
    frontendCalls: sum(rpcs),
    frontendCallsByOperation: rpcs,
    persistenceOps: sum(persistence),
    persistenceOpsByOperation: persistence,
    persistenceMs: sum(persistenceMs),
    persistenceMsByOperation: persistenceMs,
  };
}
