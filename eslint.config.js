import js from '@eslint/js';
import globals from 'globals';
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';
import { masPlugin } from './scripts/lint/package-graph.mjs';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
      globals: { ...globals.node },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-unsafe-function-type': 'off',
      'no-console': 'error',
    },
  },
  {
    // The package graph (scripts/lint/package-graph.mjs): no app imports another app, a lib only
    // the libs listed for it, and the libs' graph stays acyclic.
    files: ['apps/**/*.ts', 'libs/**/*.ts', 'workflows/**/*.ts'],
    plugins: { mas: masPlugin },
    rules: { 'mas/package-graph': 'error' },
  },
  {
    // Workflow code is replayed deterministically inside Temporal's sandbox: no I/O, no Nest, no
    // database or Kafka clients, and activities only as types (they run in the worker, not here).
    files: ['workflows/src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Workflows may not use Node built-ins.' })),
          patterns: [
            { group: ['@nestjs/*'], message: 'Workflows may not import Nest.' },
            { group: ['typeorm', 'typeorm/*', 'pg', 'pg/*', 'kafkajs', 'kafkajs/*'], message: 'Workflows do no I/O.' },
            {
              group: ['@temporalio/worker', '@temporalio/client', '@temporalio/activity'],
              message: 'Workflows import only @temporalio/workflow and @temporalio/common.',
            },
            { regex: '^#libs/(?!contracts$)', message: 'Workflows import only the contracts lib.' },
            {
              group: ['**/*activities*', '**/*activity*'],
              allowTypeImports: true,
              message: 'Import activities only as types; use proxyActivities.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { ...globals.node } },
  },
);
