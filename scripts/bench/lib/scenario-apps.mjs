// The scripted model server and the service's apps from dist/, as the single-purpose benchmarks
// (streams.mjs, round-trips.mjs) run them: their own api port and task queue, the pro plan's quota
// raised out of the way, and back once each is ready.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CAPABILITIES } from '#libs/contracts';
import { send } from './http.mjs';
import { startNode, waitFor } from './procs.mjs';
import { appProcess } from '../../app-process.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const logHas = (proc, text) => async () =>
  existsSync(proc.logFile) && readFileSync(proc.logFile, 'utf8').includes(text);

/**
 * Starts the model server (0 ms), then `names` of api, worker, relay, projector, each with
 * `appEnv(app)` over the common environment, logs `<label>-<app>.log` in `runDir`; pushes every
 * process to `procs` (for stopAll) as it starts, and resolves once the model answers, the api is
 * ready, the worker polls, the relay relays and the projector runs.
 */
export async function startModelAndApps({
  label,
  names,
  env,
  apiPort,
  modelPort,
  modelKey,
  runDir,
  pidFile,
  procs,
  appEnv = () => ({}),
}) {
  const api = `http://127.0.0.1:${apiPort}`;
  const model = startNode({
    name: 'model',
    args: [join(ROOT, 'scripts/bench/model-server.mjs'), '--latency-ms', '0', '--port', String(modelPort)],
    env: { ...env, BENCH_MODEL_KEY: modelKey },
    logFile: join(runDir, `${label}-model.log`),
    pidFile,
  });
  procs.push(model);
  const plans = JSON.stringify({ pro: { monthlyQuota: 1_000_000_000, capabilities: CAPABILITIES } });
  const apps = {};
  for (const app of names) {
    apps[app] = startNode({
      name: app,
      args: appProcess(app).args,
      env: {
        ...env,
        ...appProcess(app).env,
        PORT: String(apiPort),
        PUBLIC_BASE_URL: api,
        TEMPORAL_TASK_QUEUE: `bench-${label}-${env.BENCH_TS}`,
        MAS_PLANS: plans,
        ...appEnv(app),
      },
      logFile: join(runDir, `${label}-${app}.log`),
      pidFile,
    });
    procs.push(apps[app]);
  }
  const ok = async (url, timeoutMs) => (await send({ method: 'GET', url, timeoutMs })).status === 200;
  await waitFor('the model server', 10_000, () => ok(`http://127.0.0.1:${modelPort}/healthz`, 1000), model);
  const ready = {
    api: () => waitFor('the api', 120_000, () => ok(`${api}/readyz`, 3000), apps.api),
    worker: () => waitFor('the worker', 120_000, logHas(apps.worker, 'polling task queue'), apps.worker),
    relay: () => waitFor('the relay', 60_000, logHas(apps.relay, 'relaying'), apps.relay),
    projector: () => waitFor('the projector', 60_000, logHas(apps.projector, 'running'), apps.projector),
  };
  await Promise.all(names.map((app) => ready[app]()));
  return { model, apps, api };
}
