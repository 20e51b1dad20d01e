/**
 * What every app a test starts gets unless the test (or `npm test`'s environment) says otherwise:
 * the test model servers listen on loopback, which a model base URL may reach only when the
 * operator's MODEL_ALLOW_HOSTS names it (docs/models.md). A test of the refusal sets it to ''.
 */
export const TEST_APP_ENV: Readonly<Record<string, string>> = {
  MODEL_ALLOW_HOSTS: process.env['MODEL_ALLOW_HOSTS'] ?? '127.0.0.1',
};

/** Runs `fn` with process.env overridden by `env` (undefined deletes a variable), then restores it. */
export async function withEnv<T>(env: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** An app's start in phases: when the whole took longer than `slowMs`, each phase's time goes to
 * stderr, so that a set-up hook that ran out of time says where the time went. */
export function slowStartReport(what: string, slowMs = 10_000): { done(phase: string): void; end(): void } {
  const started = performance.now();
  let last = started;
  const phases: string[] = [];
  return {
    done(phase) {
      const now = performance.now();
      phases.push(`${phase} ${Math.round(now - last)} ms`);
      last = now;
    },
    end() {
      const total = performance.now() - started;
      if (total > slowMs)
        process.stderr.write(
          `[test] ${what} took ${Math.round(total)} ms to start: ${phases.join(', ')}, then ${Math.round(performance.now() - last)} ms\n`,
        );
    },
  };
}
