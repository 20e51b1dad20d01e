import { randomBytes } from 'node:crypto';
import { loadConfig } from '#libs/config';
import { flushTracing, startTracing, stopTracing } from '#libs/observability';
import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { request } from '../support/http.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';

// One trace per request, from the HTTP call through the Temporal client, the workflow and its
// activities to the model's HTTP call and the Kafka publish, exported over OTLP/HTTP to a receiver
// in this process (OTEL_EXPORTER_OTLP_ENDPOINT), with the client's traceparent continued.
// Real api, worker, Temporal and Kafka.
let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
  // Before the stack below builds its Temporal client and worker: they add their interceptors only
  // when tracing is on.
  startTracing('mas-e2e', loadConfig({ ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }));
});
const codecToken = randomBytes(32).toString('base64url');
const stack = e2eStack({ name: 'tracing', env: { MAS_CODEC_TOKEN: codecToken, MAS_CODEC_TOKEN_IN_PATH: 'true' } });
afterAll(async () => {
  await stopTracing();
  await receiver?.close();
});

/** The spans of one trace once `expected` names are all in (the workflow's come through its sink). */
async function traceOf(traceId: string, expected: readonly string[]): Promise<ReceivedSpan[]> {
  return eventually(async () => {
    await flushTracing();
    const spans = receiver.spans.filter((s) => s.traceId === traceId);
    expect(expected.filter((name) => !spans.some((s) => s.name === name))).toEqual([]);
    return spans;
  }, 15_000);
}

/** The names from the trace's root down to `span`. */
function lineage(spans: readonly ReceivedSpan[], span: ReceivedSpan): string[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const names: string[] = [];
  for (let s: ReceivedSpan | undefined = span; s; s = s.parentSpanId ? byId.get(s.parentSpanId) : undefined)
    names.unshift(s.name);
  return names;
}

describe('OpenTelemetry traces', () => {
  it("follows a request from the HTTP call to the model call and the Kafka publish, in the caller's trace", async () => {
    const { project, auth } = await stack.fixtures.project({
      credits: 10,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' },
    });
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    stack.models.reply({ content: 'Traced words.' });
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: { ...auth, traceparent: `00-${traceId}-${callerSpanId}-01` },
      body: { message: 'hello', stream: true },
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-request-id')!;
    expect(requestId).toBeTruthy();

    const spans = await traceOf(traceId, [
      'POST /v1/agent',
      'UpdateWithStartWorkflow:firstStop',
      'RunWorkflow:agentRequestWorkflow',
      'RunActivity:callModel',
      'model call',
      'mas.stream.v1 publish',
    ]);
    const named = (name: string): ReceivedSpan => spans.find((s) => s.name === name)!;

    // The HTTP span is the child of the caller's span: the caller's trace goes on.
    const http = named('POST /v1/agent');
    expect(http).toMatchObject({ parentSpanId: callerSpanId, kind: 2, service: 'mas-e2e' });
    // HTTP span, client start span, workflow span, activity span, model call span: each the
    // ancestor of the next.
    expect(lineage(spans, named('model call'))).toEqual([
      'POST /v1/agent',
      'UpdateWithStartWorkflow:firstStop',
      'RunWorkflow:agentRequestWorkflow',
      'StartActivity:callModel',
      'RunActivity:callModel',
      'model call',
    ]);
    expect(named('model call')).toMatchObject({
      kind: 3,
      attributes: expect.objectContaining({ 'gen_ai.system': 'openai', 'gen_ai.request.model': 'gpt-test' }),
    });
    // The Kafka publish (the stream's live copy) is in the same trace, under the request's workflow.
    const publish = named('mas.stream.v1 publish');
    expect(publish.kind).toBe(4);
    expect(lineage(spans, publish).slice(0, 3)).toEqual([
      'POST /v1/agent',
      'UpdateWithStartWorkflow:firstStop',
      'RunWorkflow:agentRequestWorkflow',
    ]);
    // request_id and project_id on every layer's span.
    for (const span of [
      http,
      named('UpdateWithStartWorkflow:firstStop'),
      named('RunWorkflow:agentRequestWorkflow'),
      named('RunActivity:callModel'),
      named('model call'),
      publish,
    ]) {
      expect({
        name: span.name,
        request_id: span.attributes['request_id'],
        project_id: span.attributes['project_id'],
      }).toEqual({ name: span.name, request_id: requestId, project_id: project.id });
    }
    // Nothing the customer wrote is in a span.
    expect(JSON.stringify(spans)).not.toContain('Traced words');
  });

  it('starts a new trace when the caller sends no traceparent, or a malformed one', async () => {
    const { auth } = await stack.fixtures.project({ credits: 10 });
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: { ...auth, traceparent: '00-not-a-trace-01' },
      body: { message: 'hello' },
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-request-id');
    const http = await eventually(async () => {
      await flushTracing();
      const found = receiver.spans.find((s) => s.name === 'POST /v1/agent' && s.attributes['request_id'] === requestId);
      expect(found).toBeDefined();
      return found!;
    });
    expect(http.parentSpanId).toBeUndefined();
    expect(http.traceId).toMatch(/^[0-9a-f]{32}$/);
    await traceOf(http.traceId, ['RunWorkflow:agentRequestWorkflow', 'RunActivity:callModel', 'model call']);
  });

  it("keeps the codec endpoint's operator token out of the spans when it travels in the path", async () => {
    const traceId = randomBytes(16).toString('hex');
    const res = await request(stack.api.url, 'POST', `/codec/${codecToken}/decode`, {
      headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
      body: { payloads: [] },
    });
    expect(res.status).toBe(200);
    const [span] = await traceOf(traceId, ['POST /codec/:token/:op']);
    expect(span!.attributes['url.path']).toBe('/codec/:token/decode');
    expect(JSON.stringify(receiver.spans)).not.toContain(codecToken);
  });
});
