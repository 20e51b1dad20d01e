import nodeModule from 'node:module';

// Every call is a new process: Node's compile cache keeps the modules' compiled code on disk
// between calls. Then the CLI, whose commands load the service's modules they use and read the
// environment only when they need it (`--help` works anywhere).
// (Node 22.1 and later; @types/node 20 does not know it yet.)
(nodeModule as { enableCompileCache?: () => unknown }).enableCompileCache?.();
await import('reflect-metadata');
const { runCli } = await import('./cli.js');

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const loadConfig = async () => (await import('#libs/config')).configFromEnvironment();
try {
  // The raw environment (libs/config, the one place that reads it), for the one thing that is not
  // configuration: a secret read from a variable the operator names (`--key-from-env VAR`).
  const io = {
    out: (s: string) => process.stdout.write(s),
    err: (s: string) => process.stderr.write(s),
    readStdin,
    env: (await import('#libs/config')).rawEnvironment(),
  };
  process.exitCode = await runCli(process.argv.slice(2), loadConfig, io);
} catch (e) {
  if (e instanceof Error && e.name === 'ConfigError') {
    process.stderr.write(`${e.message}\n`);
    process.exitCode = 1;
  } else {
    throw e;
  }
}
