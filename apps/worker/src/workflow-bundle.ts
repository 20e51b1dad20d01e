import { existsSync } from 'node:fs';
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

/** Where the service's workflow code is, and how to bundle it: compiled (dist/), the bundle the
 * build made (scripts/bundle-workflows.mjs), unless workflow interceptor modules must go into it
 * (tracing) or it is missing; then the JavaScript beside this file is bundled at start; under
 * ts-jest, the TypeScript sources. */
export function workflowBundleOptions(options: { withInterceptorModules?: boolean } = {}): Pick<WorkerOptions, 'workflowsPath' | 'bundlerOptions' | 'workflowBundle'> {
  const fromSource = import.meta.url.endsWith('.ts');
  const prebuilt = fileURLToPath(new URL('../../../workflows/bundle.js', import.meta.url));
  if (!fromSource && !options.withInterceptorModules && existsSync(prebuilt)) return { workflowBundle: { codePath: prebuilt } };
  const workflowsPath = fileURLToPath(new URL(`../../../workflows/src/index.${fromSource ? 'ts' : 'js'}`, import.meta.url));
  return { workflowsPath, bundlerOptions: fromSource ? sourceBundlerOptions() : {} };
}
