import 'reflect-metadata';
import { ConfigError, configFromEnvironment, rawEnvironment } from '#libs/config';
import { runCli } from './cli.js';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

try {
  const io = { out: (s: string) => process.stdout.write(s), err: (s: string) => process.stderr.write(s), readStdin, env: rawEnvironment() };
  process.exitCode = await runCli(process.argv.slice(2), configFromEnvironment(), io);
} catch (e) {
  if (e instanceof ConfigError) {
    process.stderr.write(`${e.message}\n`);
    process.exitCode = 1;
  } else {
    throw e;
  }
}
