import type { AppConfig } from '#libs/config';
import { runCli } from '../../apps/cli/src/cli.js';

/** Runs the operator CLI in this process, as an operator types it; its output, or an error naming
 * the command and what it printed when it exits non-zero. */
export async function operatorCli(config: AppConfig, ...argv: string[]): Promise<string> {
  let out = '';
  const code = await runCli(argv, config, {
    out: (s) => (out += s),
    err: (s) => (out += s),
    readStdin: async () => '',
    env: {},
  });
  if (code !== 0) throw new Error(`mas ${argv.join(' ')} exited ${code}: ${out}`);
  return out;
}
