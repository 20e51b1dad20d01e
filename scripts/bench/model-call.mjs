// Micro-benchmark of one model call through libs/llm (the compiled `dist/`), against the bench's
// scripted OpenAI-compatible server on loopback: N sequential calls, JSON and streamed, with the
// wall time and the CPU time of this process per call. Run `npm run build` first.
//
//   node scripts/bench/model-call.mjs [--calls 200] [--provider openai] [--dist DIR]
//
// --dist compares another build (e.g. a checkout of an earlier commit, built with `npm run build`).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

const { values: args } = parseArgs({
  options: {
    calls: { type: 'string', default: '200' },
    provider: { type: 'string', default: 'openai' },
    dist: { type: 'string' },
  },
});
const calls = Number(args.calls);
const dist = args.dist ? new URL(`file://${args.dist.replace(/\/?$/, '/')}`) : new URL('../../dist/', import.meta.url);
const { callModel } = await import(new URL('libs/llm/src/index.js', dist).href);

const portFile = join(mkdtempSync(join(tmpdir(), 'model-call-bench-')), 'port');
const server = spawn(
  process.execPath,
  [new URL('./model-server.mjs', import.meta.url).pathname, '--latency-ms', '0', '--port-file', portFile],
  { stdio: 'inherit' },
);
try {
  while (!existsSync(portFile) || readFileSync(portFile, 'utf8').trim() === '') await sleep(20);
  const baseUrl = `http://127.0.0.1:${readFileSync(portFile, 'utf8').trim()}/v1`;
  const request = {
    provider: args.provider,
    model: 'bench-model',
    baseUrl,
    apiKey: 'sk-bench-0123456789',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello there' },
    ],
    tools: [],
  };
  const rows = [];
  for (const mode of ['json', 'stream']) {
    const run = () => callModel(mode === 'stream' ? { ...request, onToken: () => undefined } : request);
    for (let i = 0; i < 20; i++) await run(); // warm-up: JIT, sockets
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const lat = [];
    for (let i = 0; i < calls; i++) {
      const s = process.hrtime.bigint();
      await run();
      lat.push(Number(process.hrtime.bigint() - s) / 1e6);
    }
    const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
    const cpu = process.cpuUsage(cpu0);
    lat.sort((a, b) => a - b);
    const pct = (p) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))].toFixed(2);
    rows.push({
      mode,
      calls,
      'wall ms': wallMs.toFixed(0),
      'ms/call': (wallMs / calls).toFixed(2),
      p50: pct(50),
      p95: pct(95),
      'cpu ms/call': ((cpu.user + cpu.system) / 1000 / calls).toFixed(2),
    });
  }
  console.table(rows);
} finally {
  server.kill('SIGTERM');
}
