import {
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  Registry,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from 'prom-client';

/** What one process keeps once, however many apps (or copies of this module) it runs: end-to-end
 * tests start the api, the worker, the relay and the projector in one process. */
interface ProcessMetrics {
  readonly registry: Registry;
  /** Read before each scrape (gauges that are queried, not counted: outbox, consumer lag). */
  readonly collectors: Set<() => Promise<void>>;
  /** Whether prom-client's process metrics are on: from the first scrape, so a process that is
   * never scraped (a test) starts no event-loop or GC observer. */
  defaults: boolean;
}

const KEY = Symbol.for('mas.observability.metrics');

function processMetrics(): ProcessMetrics {
  const holder = globalThis as { [KEY]?: ProcessMetrics };
  if (!holder[KEY]) {
    holder[KEY] = { registry: new Registry(), collectors: new Set(), defaults: false };
  }
  return holder[KEY];
}

/** The process's one registry (not prom-client's global one, which a dependency could also fill). */
export const metricsRegistry: Registry = processMetrics().registry;

/** A counter of this process's registry, created on first use and shared after. */
export function counter<L extends string>(config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
  return (
    (metricsRegistry.getSingleMetric(config.name) as Counter<L> | undefined) ??
    new Counter({ ...config, registers: [metricsRegistry] })
  );
}

/** A histogram of this process's registry, created on first use and shared after. */
export function histogram<L extends string>(config: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L> {
  return (
    (metricsRegistry.getSingleMetric(config.name) as Histogram<L> | undefined) ??
    new Histogram({ ...config, registers: [metricsRegistry] })
  );
}

/** A gauge of this process's registry, created on first use and shared after. */
export function gauge<L extends string>(config: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L> {
  return (
    (metricsRegistry.getSingleMetric(config.name) as Gauge<L> | undefined) ??
    new Gauge({ ...config, registers: [metricsRegistry] })
  );
}

/** Runs `collect` before every scrape until the returned function is called (an app's shutdown). */
export function addMetricsCollector(collect: () => Promise<void>): () => void {
  const { collectors } = processMetrics();
  collectors.add(collect);
  return () => collectors.delete(collect);
}

/** The Prometheus text exposition of this process, after the collectors have run (a failing one
 * leaves its gauges as they were rather than failing the scrape). */
export async function metricsText(): Promise<string> {
  const metrics = processMetrics();
  if (!metrics.defaults) {
    metrics.defaults = true;
    collectDefaultMetrics({ register: metrics.registry });
  }
  await Promise.allSettled([...metrics.collectors].map((collect) => collect()));
  return metricsRegistry.metrics();
}

/** The content type of metricsText(). */
export const METRICS_CONTENT_TYPE = metricsRegistry.contentType;
