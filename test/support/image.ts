import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { appProcess } from '../../scripts/app-process.mjs';
import type { AppProcess } from './app-process.js';
import { eventually } from './eventually.js';

const root = new URL('../..', import.meta.url).pathname;
/** podman with the project's settings (scripts/image/podman.sh says which and why). */
const PODMAN = join(root, 'scripts/image/podman.sh');

/** The variables of `npm test`'s environment the apps read (libs/config), passed to a container by
 * name (`-e NAME`, the value from podman's environment), so that no secret is on a command line. */
const PASSED = [
  'DATABASE_URL',
  'KAFKA_BROKERS',
  'KAFKA_GROUP_PREFIX',
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_UI_URL',
  'MAS_MASTER_KEY',
  'MAS_API_KEY_PEPPER',
  'MAS_PAYLOAD_KEYS',
  'MAS_PAYLOAD_KEY_CURRENT',
  'MAS_CODEC_TOKEN',
];

/** Runs scripts/image/podman.sh with `args`; its exit code and what it wrote (stdout, stderr). */
export async function podman(
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('bash', [PODMAN, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

/**
 * Builds the image with scripts/image/build.sh (its base from Debian's packages, cached under
 * $MAS_HOME; layers cached by podman), tagged `name`, and returns its id (which another checkout's
 * build of the same tag cannot change); fails with the build's last lines, which say what is
 * missing when podman cannot be installed or run here.
 */
export async function buildImage(name: string): Promise<string> {
  const child = spawn('bash', [join(root, 'scripts/image/build.sh')], {
    env: { ...process.env, MAS_IMAGE: name },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  createInterface({ input: child.stderr }).on('line', (line) => lines.push(line));
  const [code] = (await once(child, 'close')) as [number | null];
  const id = stdout.trim().split('\n').at(-1) ?? '';
  if (code !== 0 || !/^(sha256:)?[0-9a-f]{64}$/.test(id))
    throw new Error(
      `scripts/image/build.sh failed (exit ${code}): the image cannot be built on this machine:\n${lines.slice(-40).join('\n')}`,
    );
  process.stderr.write(`${lines.filter((l) => l.startsWith('[image]')).join('\n')}\n`);
  return id;
}

/** The command line that starts `app` in the image: scripts/app-process.mjs's, with the image's
 * node (/usr/local/bin/node) and its code under /app. */
export function imageCommand(app: 'api' | 'worker' | 'worker-long' | 'relay' | 'projector' | 'console'): {
  readonly argv: string[];
  readonly env: Record<string, string>;
} {
  const started = appProcess(app, { root: '/app' });
  const node = (arg: string) => (arg === process.execPath ? 'node' : arg);
  return { argv: [node(started.command), ...started.args.map(node)], env: started.env };
}

/**
 * Runs `argv` in a container of `image` as a deployment runs it: the host's network (the local
 * stack on loopback), a read-only root filesystem with a tmpfs on /tmp alone, the image's own
 * (non-root) user, `npm test`'s configuration and `env` on top. Its output line by line, as
 * startAppProcess gives an app's; stop() is `podman stop` (SIGTERM, then SIGKILL after 30 s).
 */
export function runInImage(image: string, argv: string[], env: Record<string, string>): AppProcess & { name: string } {
  const name = `mas-e2e-${randomUUID().slice(0, 8)}`;
  const names = [...new Set([...PASSED.filter((n) => process.env[n] !== undefined), ...Object.keys(env)])];
  const child = spawn(
    'bash',
    [
      PODMAN,
      'run',
      '--rm',
      '--name',
      name,
      '--network',
      'host',
      '--read-only',
      '--read-only-tmpfs=false',
      '--tmpfs',
      '/tmp:rw,nosuid,nodev,size=64m',
      ...names.flatMap((n) => ['-e', n]),
      image,
      ...argv,
    ],
    { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = once(child, 'exit');
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr])
    createInterface({ input: stream }).on('line', (line) => lines.push(line));
  return {
    name,
    process: child,
    lines,
    started: (pattern) =>
      eventually(async () => {
        if (child.exitCode !== null)
          throw new Error(`${name} (${argv.at(-1)}) exited (${child.exitCode}):\n${lines.slice(-20).join('\n')}`);
        if (!lines.some((l) => pattern.test(l)))
          throw new Error(`${name} (${argv.at(-1)}) has not started:\n${lines.slice(-20).join('\n')}`);
      }, 120_000),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      await podman(['stop', '--time', '30', name]);
      await exited;
    },
  };
}
