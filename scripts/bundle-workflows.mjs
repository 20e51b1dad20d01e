// `npm run build`'s last step: the workflow code bundled once, at build time, into
// dist/workflows/bundle.js, so a compiled worker starts without webpack (seconds of CPU and tens
// of MB it would keep). A worker with tracing on bundles at start instead (its interceptor modules
// go into the bundle). Test workers (ts-jest) use it too while it is newer than the sources
// (apps/worker/src/workflow-bundle.ts).
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';

const dist = (path) => fileURLToPath(new URL(`../dist/${path}`, import.meta.url));
const startedAt = Date.now();
const { code } = await bundleWorkflowCode({
  workflowsPath: dist('workflows/src/index.js'),
  failureConverterPath: dist('libs/temporal/src/failure-converter.cjs'),
  logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} },
});
await writeFile(dist('workflows/bundle.js'), code);
console.log(`workflow bundle: dist/workflows/bundle.js, ${Math.round(code.length / 1024)} KB in ${Date.now() - startedAt} ms`);
