import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BundleOptions } from '@temporalio/worker';
import type { WorkerOptions } from '@temporalio/worker';

/** Bundler options for workflow code read from TypeScript sources (under ts-jest): `#libs/*`
 * resolves to the sources through the package's `mas-source` condition, not to dist/. */
export function sourceBundlerOptions(): WorkerOptions['bundlerOptions'] {
  return {
    webpackConfigHook: (config: Parameters<NonNullable<BundleOptions['webpackConfigHook']>>[0]) => ({
      ...config,
      resolve: { ...config.resolve, conditionNames: ['mas-source', 'import', 'require', 'default'] },
    }),
  };
}

/** Where the service's workflow code is, and how to bundle it: the bundle the build made
 * (scripts/bundle-workflows.mjs, dist/workflows/bundle.js), unless workflow interceptor modules must
 * go into it (tracing) or it is missing; then the JavaScript beside this file is bundled at start.
 * Under ts-jest the build's bundle is used too when it is newer than every source it is made of
 * (`npm test` builds first): webpack at each test worker's start took 10-20 s of a test file's
 * 30 s setup. Otherwise (sources changed since the build) the TypeScript sources are bundled. */
export function workflowBundleOptions(
  options: { withInterceptorModules?: boolean } = {},
): Pick<WorkerOptions, 'workflowsPath' | 'bundlerOptions' | 'workflowBundle'> {
  const fromSource = import.meta.url.endsWith('.ts');
  const prebuilt = fileURLToPath(
    new URL(fromSource ? '../../../dist/workflows/bundle.js' : '../../../workflows/bundle.js', import.meta.url),
  );
  if (
    !options.withInterceptorModules &&
    existsSync(prebuilt) &&
    (!fromSource || statSync(prebuilt).mtimeMs >= newestSourceMs())
  )
    return { workflowBundle: { codePath: prebuilt } };
  const workflowsPath = fileURLToPath(
    new URL(`../../../workflows/src/index.${fromSource ? 'ts' : 'js'}`, import.meta.url),
  );
  return { workflowsPath, bundlerOptions: fromSource ? sourceBundlerOptions() : {} };
}

/** The build id `npm run build` wrote beside its workflow bundle (scripts/bundle-workflows.mjs:
 * package version + commit), or undefined when there is no build. */
export function builtBuildId(): string | undefined {
  const fromSource = import.meta.url.endsWith('.ts');
  const file = fileURLToPath(
    new URL(fromSource ? '../../../dist/workflows/build-id' : '../../../workflows/build-id', import.meta.url),
  );
  return existsSync(file) ? readFileSync(file, 'utf8').trim() || undefined : undefined;
}

/** The latest change to the sources the workflow bundle is made of (the workflows, the contracts
 * they import, the failure converter). */
function newestSourceMs(): number {
  const newest = (path: string): number =>
    statSync(path).isDirectory()
      ? readdirSync(path).reduce((latest, name) => Math.max(latest, newest(join(path, name))), 0)
      : statSync(path).mtimeMs;
  return Math.max(
    ...[
      '../../../workflows/src',
      '../../../libs/contracts/src',
      '../../../libs/temporal/src/failure-converter.cjs',
    ].map((dir) => newest(fileURLToPath(new URL(dir, import.meta.url)))),
  );
}
