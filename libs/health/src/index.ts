/** One dependency that /readyz reports on: PostgreSQL, Kafka or Temporal. */
export interface ReadinessProbe {
  readonly name: string;
  /** Resolves when the component answers; rejects with the reason otherwise. */
  check(signal: AbortSignal): Promise<void>;
}

/** Injection token of the list of probes an app registers. */
export const READINESS_PROBES = Symbol('READINESS_PROBES');

export interface ComponentStatus {
  readonly status: 'up' | 'down';
  readonly latency_ms: number;
  readonly error?: string;
}

export interface Readiness {
  readonly status: 'ready' | 'unavailable';
  readonly components: Readonly<Record<string, ComponentStatus>>;
}

/** Runs every probe concurrently, each bounded by `timeoutMs`, so a dead component cannot hang the answer. */
export async function checkReadiness(probes: readonly ReadinessProbe[], timeoutMs: number, onDown?: (name: string, error: unknown) => void): Promise<Readiness> {
  const results = await Promise.all(
    probes.map(async (probe): Promise<[string, ComponentStatus]> => {
      const started = performance.now();
      const controller = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          reject(new Error(`no answer within ${timeoutMs} ms`));
          controller.abort();
        }, timeoutMs);
      });
      try {
        await Promise.race([probe.check(controller.signal), timeout]);
        return [probe.name, { status: 'up', latency_ms: Math.round(performance.now() - started) }];
      } catch (e) {
        // /readyz is unauthenticated: a fixed reason for callers, the driver's message (addresses,
        // hosts, user names) for the operator's log only.
        onDown?.(probe.name, e);
        const error = controller.signal.aborted ? `no answer within ${timeoutMs} ms` : 'unreachable';
        return [probe.name, { status: 'down', latency_ms: Math.round(performance.now() - started), error }];
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  const components = Object.fromEntries(results);
  const ready = results.every(([, s]) => s.status === 'up');
  return { status: ready ? 'ready' : 'unavailable', components };
}
