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

/** Where the service's workflow code is, and how to bundle it: compiled (dist/) from the JavaScript
 * beside this file, under ts-jest from the TypeScript sources. */
export function workflowBundleOptions(): Pick<WorkerOptions, 'workflowsPath' | 'bundlerOptions'> {
  const fromSource = import.meta.url.endsWith('.ts');
  const workflowsPath = fileURLToPath(new URL(`../../../workflows/src/index.${fromSource ? 'ts' : 'js'}`, import.meta.url));
  return { workflowsPath, bundlerOptions: fromSource ? sourceBundlerOptions() : {} };
}
