import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { AesGcmPayloadCodec } from '#libs/temporal';
import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { request } from '../support/http.js';
import { connectTemporalRaw, historyText } from '../support/temporal.js';

// A failure's message and stack trace travel encrypted (the failure converter's
// encodeCommonAttributes, sealed by the payload codec): a provider that echoes the customer's
// input in its error leaves no plaintext in the Temporal history. Real api, worker and Temporal.
const stack = e2eStack({ name: 'failure-encryption' });

describe('encrypted failure messages', () => {
  let connection: Connection;
  /** A client WITHOUT the codec: what anyone who reads the history without the keys sees. */
  let raw: Client;

  beforeAll(async () => {
    connection = await connectTemporalRaw(stack.config);
    raw = new Client({ connection, namespace: stack.config.temporal.namespace });
  });
  afterAll(async () => {
    await connection?.close();
  });

  it("keeps a failed request's error message out of its raw history, and the api still answers it", async () => {
    const { project, auth } = await stack.fixtures.project({
      credits: 10,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' },
    });
    const echoed = `kingfisher-${randomUUID()}`;
    // The provider refuses the request and echoes the customer's text in its error message.
    stack.models.reply({ status: 400, errorMessage: `the prompt "${echoed}" is not allowed` });
    const res = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: echoed } });
    expect(res.status).toBe(502);
    // The failure still reaches the api decrypted: its message says, in the service's words, what
    // the provider answered (never the provider's body, which echoed the customer's text).
    expect(res.body.error).toMatchObject({
      code: 'compute_error',
      message: 'model provider openai rejected the request (HTTP 400)',
    });

    const found = await eventually(async () => {
      const ids: string[] = [];
      for await (const w of raw.workflow.list({ query: `ProjectId = '${project.id}'` })) ids.push(w.workflowId);
      expect(ids).toHaveLength(1);
      return ids[0]!;
    });
    const history = await raw.workflow.getHandle(found).fetchHistory();
    // The model call is a local activity: its failure is in its marker (a regular activity's would
    // be in ActivityTaskFailed; both are checked).
    const failures = (history.events ?? [])
      .flatMap((e) => [e.activityTaskFailedEventAttributes?.failure, e.markerRecordedEventAttributes?.failure])
      .filter((f) => f != null);
    expect(failures.length).toBeGreaterThan(0);
    for (const failure of failures) {
      expect(failure.message).toBe('Encoded failure');
      expect(failure.stackTrace ?? '').toBe('');
      // The error code stays readable: Temporal's retry logic and operators need it.
      expect(failure.applicationFailureInfo?.type).toBe('compute_error');
    }
    const stored = JSON.stringify(history) + (await historyText(history));
    expect(stored).not.toContain(echoed);
    expect(stored).not.toContain('kingfisher');
    expect(stored).not.toContain('rejected the request');
    // With the keys, the message is there: the test would see it if it were stored.
    expect(await historyText(history, AesGcmPayloadCodec.fromConfig(stack.config))).toContain(
      'rejected the request (HTTP 400)',
    );
  });
});
