// Runs the compiled api, worker and projector side by side for `npm start`: prefixes each line
// of their output with the app's name, stops them all on Ctrl-C, and stops them all (exiting
// non-zero) when any one of them dies.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const apps = process.argv.slice(2);
const children = new Map();
let stopping = false;

function stopAll(code) {
  if (stopping) return;
  stopping = true;
  for (const child of children.values()) child.kill('SIGTERM');
  const force = setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
  }, 15000);
  force.unref();
  process.exitCode = code;
}

for (const app of apps) {
  const child = spawn(process.execPath, ['--enable-source-maps', `dist/apps/${app}/src/main.js`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.set(app, child);
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => process.stdout.write(`[${app}] ${line}\n`));
  }
  child.on('exit', (code, signal) => {
    children.delete(app);
    if (!stopping) {
      process.stdout.write(`[${app}] exited (${signal ?? `code ${code}`}); stopping the others\n`);
      stopAll(1);
    }
  });
}

process.on('SIGINT', () => stopAll(130));
process.on('SIGTERM', () => stopAll(143));
