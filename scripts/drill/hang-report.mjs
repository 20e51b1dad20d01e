// Prints what a Node diagnostic report (node --report-on-signal) says a stuck process was doing:
// the JavaScript stack of its main thread and of each worker thread, and its open libuv handles
// (sockets with their peers, timers) — what `scripts/drill/run.sh` shows when the drill overruns
// its time budget, instead of hanging until the CI's own limit.
// Usage: node scripts/drill/hang-report.mjs <report.json>
import { readFileSync } from 'node:fs';

const report = JSON.parse(readFileSync(process.argv[2], 'utf8'));

function stackOf(r, who) {
  const js = r.javascriptStack ?? {};
  const frames = (js.stack ?? []).filter((l) => l && !l.includes('node:internal/process/report'));
  const idle = frames.length === 0 || frames[0] === 'Unavailable.';
  console.log(`${who}: ${idle ? 'no JavaScript running (waiting on the event loop)' : js.message}`);
  if (idle) return;
  for (const line of frames.slice(0, 15)) console.log(`    ${line.trim()}`);
}

function handlesOf(r, who) {
  const handles = r.libuv ?? [];
  const active = handles.filter((h) => h.is_active);
  const byType = {};
  for (const h of active) byType[h.type] = (byType[h.type] ?? 0) + 1;
  console.log(`${who}: ${active.length} active libuv handle(s) ${JSON.stringify(byType)}`);
  for (const h of active.filter((x) => x.type === 'tcp').slice(0, 40)) {
    const local = h.localEndpoint ? `${h.localEndpoint.ip ?? h.localEndpoint.host}:${h.localEndpoint.port}` : '?';
    const remote = h.remoteEndpoint ? `${h.remoteEndpoint.ip ?? h.remoteEndpoint.host}:${h.remoteEndpoint.port}` : '-';
    console.log(
      `    tcp ${local} -> ${remote} readable=${h.readable} writable=${h.writable} send=${h.sendBufferSize} recv=${h.recvBufferSize} writeQueue=${h.writeQueueSize}`,
    );
  }
}

stackOf(report, 'main thread');
handlesOf(report, 'main thread');
for (const [i, w] of (report.workers ?? []).entries()) {
  stackOf(w, `worker thread ${i + 1}`);
  handlesOf(w, `worker thread ${i + 1}`);
}
const heap = report.javascriptHeap;
if (heap)
  console.log(`heap: ${(heap.usedMemory / 1e6).toFixed(0)} MB used of ${(heap.totalMemory / 1e6).toFixed(0)} MB`);
console.log(`event loop: ${JSON.stringify(report.header?.uvLoop ?? report.uvthreadResourceUsage ?? {})}`);
