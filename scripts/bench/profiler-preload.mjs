// Preloaded by the benchmark into the api, worker and projector (`node --import`): a CPU profiler
// of the main thread switched by SIGWINCH, so the harness profiles exactly its load window
// without changing the apps. The first signal starts V8's sampling profiler, the second writes
// `<BENCH_PROFILE_DIR>/<BENCH_PROFILE_NAME>.cpuprofile`. SIGUSR2 is not usable: Temporal's
// runtime takes it as a shutdown signal. Without BENCH_PROFILE_DIR this does nothing.
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.BENCH_PROFILE_DIR;
const name = process.env.BENCH_PROFILE_NAME ?? String(process.pid);

if (dir) {
  let session;
  const post = (method, params) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))),
    );
  const toggle = async () => {
    if (!session) {
      session = new Session();
      session.connect();
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: 500 });
      await post('Profiler.start');
      return;
    }
    const { profile } = await post('Profiler.stop');
    session.disconnect();
    session = undefined;
    writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
  };
  process.on('SIGWINCH', () => {
    toggle().catch((e) => process.stderr.write(`[bench profiler] ${e instanceof Error ? e.message : String(e)}\n`));
  });
}
