/** One dependency that /readyz reports on: PostgreSQL, Kafka or Temporal. */
export interface ReadinessProbe {
  readonly name: string;
  /** False for a component whose trouble is reported but must not take the app out of a load
   * balancer (e.g. a relay that lags: the api can still take requests). Default true. */
  readonly critical?: boolean;
  /** Resolves when the component answers; rejects with the reason otherwise. */
  check(signal: AbortSignal): Promise<void>;
}

/** A probe's failure whose message is safe to show unauthenticated callers (no addresses, no
 * driver text), e.g. "the oldest unsent outbox row is 95 s old". */
export class ProbeFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProbeFailure';
  }
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
export async function checkReadiness(
  probes: readonly ReadinessProbe[],
  timeoutMs: number,
  onDown?: (name: string, error: unknown) => void,
): Promise<Readiness> {
  const results = await Promise.all(
    probes.map(async (probe): Promise<[string, ComponentStatus, boolean]> => {
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
        return [
          probe.name,
          { status: 'up', latency_ms: Math.round(performance.now() - started) },
          probe.critical ?? true,
        ];
      } catch (e) {
        // /readyz is unauthenticated: a fixed reason for callers, the driver's message (addresses,
        // hosts, user names) for the operator's log only.
        onDown?.(probe.name, e);
        const error =
          e instanceof ProbeFailure
            ? e.message
            : controller.signal.aborted
              ? `no answer within ${timeoutMs} ms`
              : 'unreachable';
        return [
          probe.name,
          { status: 'down', latency_ms: Math.round(performance.now() - started), error },
          probe.critical ?? true,
        ];
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  const components = Object.fromEntries(results.map(([name, status]) => [name, status]));
  const ready = results.every(([, s, critical]) => !critical || s.status === 'up');
  return { status: ready ? 'ready' : 'unavailable', components };
}
