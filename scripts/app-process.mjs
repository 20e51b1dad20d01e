// How an app's process is started, in one place: `npm start` (run-apps.mjs), the drill, the
// benchmark and the observability test use it, and docker-compose.yml repeats it (YAML cannot
// import). Measured in docs/performance.md (issue 16):
// - `--max-semi-space-size=16`: Node 24's V8 grows the young generation to 2 x 64 MB under load
//   and keeps it; 16 MB semi-spaces (Node 20's size) take the warm worker from ~346 to ~297 MB
//   idle at the same CPU per request (8 MB costs about 20% more CPU in scavenges);
// - `MALLOC_ARENA_MAX=2`: glibc gives each thread that allocates its own malloc arena; the
//   worker's Rust core runs many threads, and two arenas take its idle RSS down by about 17 MB;
// - the source-maps preload instead of `--enable-source-maps`: the service's own stack traces
//   stay mapped to TypeScript without reading every dependency's source maps.
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');

/** The CPU priority (nice) of the bulkhead's worker on a machine it shares with the rest. */
const LONG_ACTIVITY_NICE = 10;

/**
 * The command, its arguments and the environment additions for running `app` (api, worker,
 * relay, projector, console or cli), or `worker-long`: the bulkhead's worker (the worker's code
 * with TEMPORAL_WORKER_ROLE=long-activities, docs/operations.md), at a lower CPU priority (`nice`)
 * than the rest, so that on shared cores the short path of every request wins a burst, and
 * without metrics ports of its own (the workflows' worker has them).
 */
export function appProcess(app, { root = ROOT, preload = [] } = {}) {
  const long = app === 'worker-long';
  const args = [
    '--max-semi-space-size=16',
    '--import',
    join(root, 'dist/libs/observability/src/source-maps.js'),
    ...preload.flatMap((file) => ['--import', file]),
    join(root, `dist/apps/${long ? 'worker' : app}/src/main.js`),
  ];
  const env = { MALLOC_ARENA_MAX: '2' };
  if (!long) return { command: process.execPath, args, env };
  return {
    command: 'nice',
    args: ['-n', String(LONG_ACTIVITY_NICE), process.execPath, ...args],
    env: { ...env, TEMPORAL_WORKER_ROLE: 'long-activities', WORKER_METRICS_PORT: '', TEMPORAL_SDK_METRICS_PORT: '' },
  };
}
