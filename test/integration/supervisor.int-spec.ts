import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** `npm start`'s supervisor (scripts/run-apps.mjs) over the compiled projector, with the test
 * stack: an app killed by its pid comes back by itself, and SIGTERM stops everything cleanly. */
describe('the app supervisor', () => {
  let supervisor: ChildProcess;
  const lines: string[] = [];

  const waitForLine = async (pattern: RegExp, from = 0, waitMs = 30_000): Promise<RegExpMatchArray> => {
    const deadline = Date.now() + waitMs;
    for (;;) {
      for (const line of lines.slice(from)) {
        const match = pattern.exec(line);
        if (match) return match;
      }
      if (Date.now() > deadline) throw new Error(`no line matching ${String(pattern)} in:\n${lines.join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  beforeAll(() => {
    if (!existsSync(`${root}/dist/apps/projector/src/main.js`))
      throw new Error('dist/ is missing: `npm test` builds it first');
    supervisor = spawn(process.execPath, ['scripts/run-apps.mjs', 'projector'], {
      cwd: root,
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [supervisor.stdout!, supervisor.stderr!])
      createInterface({ input: stream }).on('line', (line) => lines.push(line));
  });
  afterAll(() => {
    if (supervisor.exitCode === null) supervisor.kill('SIGKILL');
    // A supervisor killed so leaves its app running: every projector it started goes too, so a
    // failed run leaves no consumer in the test's groups.
    for (const line of lines) {
      const pid = /^\[projector\] started \(pid (\d+)\)/.exec(line)?.[1];
      if (pid) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
    }
  });

  it('restarts an app that was killed, then stops it on SIGTERM', async () => {
    const first = Number((await waitForLine(/^\[projector\] started \(pid (\d+)\)/))[1]);
    await waitForLine(/running projections/);
    const seen = lines.length;
    process.kill(first, 'SIGKILL');
    await waitForLine(/^\[projector\] exited \(SIGKILL\); restarting in 1 s/, seen);
    const second = Number((await waitForLine(/^\[projector\] started \(pid (\d+)\)/, seen))[1]);
    expect(second).not.toBe(first);
    // The restarted projector's consumers join their groups once Kafka has dropped the killed
    // one's members: up to the session timeout (30 s) after their last heartbeat.
    await waitForLine(/running projections/, seen, 75_000);

    supervisor.kill('SIGTERM');
    const [code, signal] = (await once(supervisor, 'exit')) as [number | null, NodeJS.Signals | null];
    expect({ code, signal }).toEqual({ code: 143, signal: null });
    expect(() => process.kill(second, 0)).toThrow();
  }, 150_000);
});
