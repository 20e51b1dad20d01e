import { trace } from '@opentelemetry/api';
import { httpTracing } from './http-tracing.js';
import { temporalClientTracing, temporalWorkerTracing } from './temporal-tracing.js';
import { requestAttributes, startTracing, traceHeaders, tracingEnabled, withSpan } from './tracing.js';

// Tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT): nothing is registered and no hook adds work.
describe('tracing off', () => {
  it('starts nothing without an endpoint, and every hook is empty', async () => {
    expect(startTracing('mas-test', { tracing: { otlpEndpoint: undefined } })).toBe(false);
    expect(tracingEnabled()).toBe(false);
    expect(httpTracing()).toBeUndefined();
    expect(temporalClientTracing()).toEqual([]);
    expect(temporalWorkerTracing()).toEqual({});
    expect(traceHeaders()).toBeUndefined();
    let active: unknown = 'unset';
    await expect(withSpan('x', 0, {}, async () => ((active = trace.getActiveSpan()), 42))).resolves.toBe(42);
    expect(active).toBeUndefined();
  });

  it('names a request by request_id and project_id, ignoring what is not a string', () => {
    expect(requestAttributes({ requestId: 'r1', projectId: 'p1' })).toEqual({ request_id: 'r1', project_id: 'p1' });
    expect(requestAttributes({ requestId: 7, projectId: undefined })).toEqual({});
  });
});
