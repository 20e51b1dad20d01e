import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Tracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { configFromEnvironment, type AppConfig } from '#libs/config';

/** The tracing of this process once started: one provider, one batch processor. */
interface ActiveTracing {
  readonly provider: NodeTracerProvider;
  readonly processor: SpanProcessor;
  readonly resource: Resource;
  readonly tracer: Tracer;
}

let active: ActiveTracing | undefined;

/**
 * Starts OpenTelemetry tracing for this process when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (or an
 * exporter is given): spans are batched and exported over OTLP/HTTP to `<endpoint>/v1/traces`, W3C
 * trace context is the propagator, and the context follows async calls (AsyncLocalStorage).
 * Otherwise nothing is registered and every hook of this module is a single branch. Call it once,
 * before the app builds its Temporal client and worker (they add their interceptors only when
 * tracing is on). Returns whether tracing is on.
 */
export function startTracing(
  serviceName: string,
  config: Pick<AppConfig, 'tracing'> = configFromEnvironment(),
  exporter?: SpanExporter,
): boolean {
  if (active) return true;
  const endpoint = config.tracing.otlpEndpoint;
  const spanExporter =
    exporter ?? (endpoint ? new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` }) : undefined);
  if (!spanExporter) return false;
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName });
  const processor = new BatchSpanProcessor(spanExporter);
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  provider.register();
  active = { provider, processor, resource, tracer: trace.getTracer('managed-agent-service') };
  return true;
}

/** Whether this process traces (startTracing found an endpoint or was given an exporter). */
export function tracingEnabled(): boolean {
  return active !== undefined;
}

/** The active tracing, for the Temporal and HTTP hooks of this lib. */
export function activeTracing(): ActiveTracing | undefined {
  return active;
}

/** Exports every span ended so far (tests, and before a process exits). */
export async function flushTracing(): Promise<void> {
  await active?.provider.forceFlush();
}

/** Flushes and stops tracing, and unregisters it from the OpenTelemetry API. */
export async function stopTracing(): Promise<void> {
  const stopping = active;
  if (!stopping) return;
  active = undefined;
  await stopping.provider.shutdown();
  trace.disable();
  context.disable();
  propagation.disable();
}

/** The span attributes that tie a span to a request: `request_id` and `project_id`. */
export function requestAttributes(ids: { requestId?: unknown; projectId?: unknown }): Attributes {
  const attributes: Attributes = {};
  if (typeof ids.requestId === 'string') attributes['request_id'] = ids.requestId;
  if (typeof ids.projectId === 'string') attributes['project_id'] = ids.projectId;
  return attributes;
}

/**
 * Runs `fn` in a new span, child of the active one (an error ends it with status ERROR). With
 * tracing off it is `fn()` and nothing else.
 */
export function withSpan<T>(name: string, kind: SpanKind, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  if (!active) return fn();
  return active.tracer.startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn();
    } catch (e) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.name : 'error' });
      throw e;
    } finally {
      span.end();
    }
  });
}

/** W3C trace-context headers of the active span, for a message that leaves the process (Kafka);
 * undefined with tracing off. */
export function traceHeaders(): Record<string, string> | undefined {
  if (!active) return undefined;
  const headers: Record<string, string> = {};
  propagation.inject(context.active(), headers);
  return headers;
}

export { SpanKind };
