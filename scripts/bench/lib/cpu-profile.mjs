// Summarises a V8 .cpuprofile: self time by what the code belongs to (Temporal SDK, Postgres
// driver and TypeORM, Kafka, Nest/Express, JSON, GC, the service's own code) and the hottest
// functions.
import { readFileSync } from 'node:fs';

const FAMILIES = [
  ['temporal sdk', /node_modules\/(@temporalio|@grpc|protobufjs|long)\//],
  ['pg + typeorm', /node_modules\/(pg|pg-protocol|pg-pool|pg-types|postgres-[a-z-]+|typeorm)\//],
  ['kafkajs', /node_modules\/kafkajs\//],
  [
    'nest + express',
    /node_modules\/(@nestjs|express|body-parser|router|raw-body|iconv-lite|finalhandler|send|qs|path-to-regexp|reflect-metadata|on-finished|statuses|content-type|type-is|mime-types|cookie|accepts|negotiator|depd|http-errors|media-typer)\//,
  ],
  ['rxjs', /node_modules\/rxjs\//],
  ['ajv', /node_modules\/ajv\//],
  ['service code', /\/dist\//],
  ['other packages', /node_modules\//],
  [
    'node net/http',
    /^node:(_http|http|net|stream|internal\/(http|streams|net|stream_base|child_process|dns)|internal\/js_stream)/,
  ],
  ['async_hooks', /^node:(async_hooks|internal\/async_hooks|internal\/async_local_storage)/],
  ['node timers/promises', /^node:(timers|events|internal\/(timers|process\/task_queues|event_target|promise))/],
  ['worker threads', /^node:(worker_threads|internal\/worker)/],
  ['node other', /^node:/],
];

function familyOf(node) {
  const { functionName, url } = node.callFrame;
  if (functionName === '(garbage collector)') return 'gc';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)') return 'v8 (program)';
  if (!url && /^(parse|stringify|JSONParse|JSONStringify)$/.test(functionName)) return 'json';
  if (!url && /^temporal_sdk/.test(functionName)) return 'temporal sdk';
  if (
    !url &&
    /^(writeBuffer|writev|writeUtf8String|writeLatin1String|writeAsciiString|readBuffer|onStreamRead)$/.test(
      functionName,
    )
  )
    return 'node net/http';
  if (!url && functionName === 'postMessage') return 'worker threads';
  if (!url && functionName === 'runMicrotasks') return 'node timers/promises';
  if (!url) return 'v8 builtins';
  for (const [family, re] of FAMILIES) if (re.test(url)) return family;
  return 'other';
}

/** Self time by family (ms and share of the busy time) and the top functions, of one profile. */
export function summariseProfile(file, top = 12) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfMs = new Map();
  const deltas = profile.timeDeltas ?? [];
  profile.samples.forEach((id, i) => {
    const dt = (deltas[i + 1] ?? deltas[i] ?? 0) / 1000;
    selfMs.set(id, (selfMs.get(id) ?? 0) + dt);
  });
  const families = {};
  const functions = new Map();
  let busy = 0;
  let idle = 0;
  for (const [id, msSelf] of selfMs) {
    const node = byId.get(id);
    if (!node) continue;
    const family = familyOf(node);
    if (family === 'idle') {
      idle += msSelf;
      continue;
    }
    busy += msSelf;
    families[family] = (families[family] ?? 0) + msSelf;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url
      ? `${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/dist\//, 'dist/')}:${lineNumber + 1}`
      : '(native)';
    const key = `${functionName || '(anonymous)'} ${where}`;
    functions.set(key, (functions.get(key) ?? 0) + msSelf);
  }
  const share = (x) => (busy > 0 ? x / busy : 0);
  return {
    wallMs: (profile.endTime - profile.startTime) / 1000,
    busyMs: busy,
    idleMs: idle,
    families: Object.entries(families)
      .sort((a, b) => b[1] - a[1])
      .map(([family, msSelf]) => ({ family, ms: msSelf, share: share(msSelf) })),
    topFunctions: [...functions.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([fn, msSelf]) => ({ fn, ms: msSelf, share: share(msSelf) })),
  };
}
