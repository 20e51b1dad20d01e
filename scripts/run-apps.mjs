// Supervises the compiled apps (api, worker, worker-long, relay, projector, console) side by side for `npm start`: prefixes each
// line of their output with the app's name, restarts an app that dies (with a backoff that doubles
// from 1 s to 30 s, and starts again from 1 s once the app has stayed up for a minute), and on
// Ctrl-C or SIGTERM stops them all with SIGTERM, so each drains its in-flight work before it exits.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { appProcess } from './app-process.mjs';

const apps = process.argv.slice(2);
const children = new Map();
const MIN_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 30_000;
const STABLE_MS = 60_000;
/** How long a stopping app may drain before it is killed. */
const DRAIN_MS = 30_000;
let stopping = false;

const say = (app, line) => process.stdout.write(`[${app}] ${line}\n`);

function start(app, backoffMs) {
  if (stopping) return;
  const startedAt = Date.now();
  const { command, args, env } = appProcess(app);
  // One machine, one worker: the build just started becomes current (Worker Versioning), so a
  // rebuilt worker takes new requests at once; runs pinned to the previous build wait for it.
  const child = spawn(command, args, {
    env: { TEMPORAL_DEPLOYMENT_PROMOTE: 'on-start', ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.set(app, child);
  say(app, `started (pid ${child.pid})`);
  for (const stream of [child.stdout, child.stderr])
    createInterface({ input: stream }).on('line', (line) => say(app, line));
  child.on('exit', (code, signal) => {
    children.delete(app);
    if (stopping) {
      if (children.size === 0) process.exit();
      return;
    }
    const next = Date.now() - startedAt >= STABLE_MS ? MIN_BACKOFF_MS : backoffMs;
    say(app, `exited (${signal ?? `code ${code}`}); restarting in ${next / 1000} s`);
    setTimeout(() => start(app, Math.min(next * 2, MAX_BACKOFF_MS)), next);
  });
}

function stopAll(code) {
  if (stopping) return;
  stopping = true;
  process.exitCode = code;
  if (children.size === 0) process.exit();
  for (const child of children.values()) child.kill('SIGTERM');
  setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
  }, DRAIN_MS).unref();
}

for (const app of apps) start(app, MIN_BACKOFF_MS);

process.on('SIGINT', () => stopAll(130));
process.on('SIGTERM', () => stopAll(143));
