import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { appProcess } from '../../scripts/app-process.mjs';
import { TEST_APP_ENV } from './env.js';
import { eventually } from './eventually.js';

const root = new URL('../..', import.meta.url).pathname;

/** A compiled app (dist/apps/<app>/src/main.js) running as `npm start` runs it, in a process of its own. */
export interface AppProcess {
  readonly process: ChildProcess;
  /** What it wrote so far, stdout and stderr, line by line. */
  readonly lines: string[];
  /** Waits until a line matches `pattern` (fails if the app exits first). */
  started(pattern: RegExp): Promise<void>;
  /** SIGTERM, then SIGKILL after 30 s. */
  stop(): Promise<void>;
}

/** Starts `app` from dist/ with `env` (on top of this process's environment); from the dist/ of
 * another checkout when `from` names its root (e.g. the previous release, built apart). */
export function startAppProcess(
  app: 'api' | 'worker' | 'worker-long' | 'relay' | 'projector',
  env: Record<string, string | undefined>,
  from: string = root,
): AppProcess {
  const started = appProcess(app, { root: from });
  if (!existsSync(started.args.at(-1)!))
    throw new Error(`${join(from, 'dist')} is missing: \`npm test\` builds it first`);
  const child = spawn(started.command, started.args, {
    cwd: from,
    env: { ...TEST_APP_ENV, ...process.env, ...env, ...started.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr])
    createInterface({ input: stream }).on('line', (line) => lines.push(line));
  return {
    process: child,
    lines,
    started: (pattern) =>
      eventually(async () => {
        if (child.exitCode !== null)
          throw new Error(`${app} exited (${child.exitCode}):\n${lines.slice(-20).join('\n')}`);
        if (!lines.some((l) => pattern.test(l)))
          throw new Error(`${app} has not started:\n${lines.slice(-20).join('\n')}`);
      }, 90_000),
    stop: async () => {
      // Gone already (exited, or killed by a signal, as a test's hook kills a worker).
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await once(child, 'exit');
      clearTimeout(timer);
    },
  };
}
