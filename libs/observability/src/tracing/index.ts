export {
  startTracing,
  stopTracing,
  flushTracing,
  tracingEnabled,
  withSpan,
  traceHeaders,
  requestAttributes,
  SpanKind,
} from './tracing.js';
export { temporalClientTracing, temporalWorkerTracing } from './temporal-tracing.js';
export { httpTracing } from './http-tracing.js';
