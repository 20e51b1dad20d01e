// Five tiers (STYLE.md, docs/security.md): unit tests beside the code with no I/O; integration tests against the real
// stack; workflow tests under Temporal's time-skipping server; end-to-end tests over HTTP; and the
// security tier, end-to-end tests that play an attacker.
const base = {
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^#libs/([^/]+)$': '<rootDir>/libs/$1/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.json' }],
  },
  testEnvironment: 'node',
  rootDir: '.',
};

export default {
  testTimeout: 30000,
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/{apps,libs,workflows,scripts}/**/*.spec.ts'] },
    { ...base, displayName: 'workflow', testMatch: ['<rootDir>/workflows/test/**/*.workflow-spec.ts'] },
    { ...base, displayName: 'integration', testMatch: ['<rootDir>/{apps,libs,test}/**/*.int-spec.ts'] },
    { ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'] },
    // The security tier (docs/security.md): the service as an attacker uses it, over the real apps.
    { ...base, displayName: 'security', testMatch: ['<rootDir>/test/security/**/*.security-spec.ts'] },
  ],
};
