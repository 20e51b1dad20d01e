// The scripts run the project's Node.js (package.json's `node` package, >= 24), however they are
// started. `npm run` puts node_modules/.bin first on PATH; a script started directly did not, and
// .ci/run starts scripts/stack/cluster-e2e.sh directly: on a new machine its tests ran on the
// machine's Node 20, where run_javascript's sandbox thread cannot start (a CI run failed on it).
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');

/** Every executable shell script of the project (a `#!` first line; sourced files have none). */
function executableScripts(): string[] {
  const found = [join(root, '.ci/run')];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.sh')) found.push(path);
    }
  };
  walk(join(root, 'scripts'));
  return found.filter((path) => readFileSync(path, 'utf8').startsWith('#!'));
}

/** Lines that start node (or npx) themselves, not through npm: comments left out. */
const RUNS_NODE = /(^|[\s;(&|`])(node|npx)\s/;
const TAKES_PROJECT_NODE = /^\s*\.\s.*(scripts\/stack\/env\.sh|node-path\.sh)/;

describe("the scripts run the project's Node.js", () => {
  it("puts the project's node before the machine's on PATH", () => {
    const machine = mkdtempSync(join(tmpdir(), 'machine-node-'));
    try {
      writeFileSync(join(machine, 'node'), '#!/bin/sh\necho v20.0.0\n');
      chmodSync(join(machine, 'node'), 0o755);
      const project = execFileSync(join(root, 'node_modules/.bin/node'), ['--version'], { encoding: 'utf8' }).trim();
      const seen = execFileSync('bash', ['-c', '. scripts/node-path.sh && node --version'], {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, PATH: `${machine}:/usr/bin:/bin` },
      }).trim();
      expect(seen).toBe(project);
      expect(Number(/^v(\d+)/.exec(seen)?.[1])).toBeGreaterThanOrEqual(24);
    } finally {
      rmSync(machine, { recursive: true, force: true });
    }
  });

  it('has every script that starts node take the project node first', () => {
    const late = executableScripts().flatMap((path) => {
      const lines = readFileSync(path, 'utf8').split('\n');
      const code = (line: string): boolean => !line.trimStart().startsWith('#');
      const firstNode = lines.findIndex((line) => code(line) && RUNS_NODE.test(line));
      const setUp = lines.findIndex((line) => TAKES_PROJECT_NODE.test(line));
      return firstNode >= 0 && (setUp < 0 || setUp > firstNode)
        ? [`${relative(root, path)}:${firstNode + 1}: ${lines[firstNode]!.trim()}`]
        : [];
    });
    expect(late).toEqual([]);
  });
});
