// `npm run build`'s last step: the workflow code bundled once, at build time, into
// dist/workflows/bundle.js, so a compiled worker starts without webpack (seconds of CPU and tens
// of MB it would keep). A worker with tracing on bundles at start instead (its interceptor modules
// go into the bundle). Test workers (ts-jest) use it too while it is newer than the sources
// (apps/worker/src/workflow-bundle.ts).
//
// Beside it, dist/workflows/build-id: the build id the worker polls under (Worker Versioning,
// docs/operations.md): the package version and the commit, plus the bundle's hash when the work
// tree has uncommitted changes (two different codes must never share a build id: a run pinned to
// a build replays on whatever worker polls under that id), or the bundle's hash alone outside git.
// MAS_BUILD_ID, when set, is the build id as given: the image's build (the Dockerfile's BUILD_ID
// argument) has no .git, and scripts/image/build.sh passes the version and the commit it builds.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';

const root = fileURLToPath(new URL('..', import.meta.url));
const given = process.env.MAS_BUILD_ID?.trim();
if (given && !/^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$/.test(given)) {
  console.error(`MAS_BUILD_ID ${JSON.stringify(given)}: letters, digits and . _ + - only, at most 128 characters`);
  process.exit(1);
}
const dist = (path) => fileURLToPath(new URL(`../dist/${path}`, import.meta.url));
const startedAt = Date.now();
const { code } = await bundleWorkflowCode({
  workflowsPath: dist('workflows/src/index.js'),
  failureConverterPath: dist('libs/temporal/src/failure-converter.cjs'),
  logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} },
});
await writeFile(dist('workflows/bundle.js'), code);

const git = (...args) => {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
};
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const bundleHash = createHash('sha256').update(code).digest('hex').slice(0, 12);
const commit = git('rev-parse', '--short=12', 'HEAD');
const dirty = commit !== undefined && git('status', '--porcelain', '--untracked-files=no') !== '';
const buildId = given
  ? given
  : commit === undefined
    ? `${version}+${bundleHash}`
    : dirty
      ? `${version}+${commit}.dirty.${bundleHash}`
      : `${version}+${commit}`;
await writeFile(dist('workflows/build-id'), `${buildId}\n`);
console.log(
  `workflow bundle: dist/workflows/bundle.js, ${Math.round(code.length / 1024)} KB in ${Date.now() - startedAt} ms; build id ${buildId}`,
);
