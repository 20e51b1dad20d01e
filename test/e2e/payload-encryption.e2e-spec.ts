import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { agentRequestWorkflowId } from '#libs/contracts';
import { AesGcmPayloadCodec } from '#libs/temporal';
import { startApi, type RunningApi } from '../support/api.js';
import { testConfig } from '../support/config.js';
import { Fixtures } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { connectTemporalRaw, historyText, payloadsOf } from '../support/temporal.js';
import { APP_CLOSE_TIMEOUT_MS, startWorker, type RunningWorker } from '../support/worker.js';

// Temporal payloads are encrypted (AES-256-GCM, key id in the metadata) by every client and
// worker; a key rotation does not break a workflow in flight. Real api, worker and Temporal.
// Its own set-up, not e2eStack: each test starts and stops the api and the worker under changing
// payload keys (a rotation in flight).
const config = testConfig();
const taskQueue = `e2e-payload-encryption-${randomUUID()}`;
const keyA = randomBytes(32);
const keyB = randomBytes(32);
const underA = {
  TEMPORAL_TASK_QUEUE: taskQueue,
  MAS_PAYLOAD_KEYS: `test-a:${keyA.toString('base64')}`,
  MAS_PAYLOAD_KEY_CURRENT: 'test-a',
};
const underB = {
  TEMPORAL_TASK_QUEUE: taskQueue,
  MAS_PAYLOAD_KEYS: `test-a:${keyA.toString('base64')},test-b:${keyB.toString('base64')}`,
  MAS_PAYLOAD_KEY_CURRENT: 'test-b',
};
const lookup = {
  name: 'lookup',
  description: 'Look up',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
};

describe('encrypted Temporal payloads', () => {
  let fixtures: Fixtures;
  let connection: Connection;
  /** A client WITHOUT the codec: what anyone who opens the Temporal UI or CLI without it sees. */
  let raw: Client;
  const running: { close(): Promise<void> }[] = [];
  const start = async (env: Record<string, string>): Promise<{ worker: RunningWorker; api: RunningApi }> => {
    const worker = await startWorker(env);
    running.push(worker);
    const api = await startApi(env);
    running.push(api);
    return { worker, api };
  };
  const stop = async (...apps: { close(): Promise<void> }[]): Promise<void> => {
    for (const app of apps) {
      running.splice(running.indexOf(app), 1);
      await app.close();
    }
  };

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    connection = await connectTemporalRaw(config);
    raw = new Client({ connection, namespace: config.temporal.namespace });
  });
  afterAll(async () => {
    for (const app of running.reverse()) await app.close();
    await connection?.close();
    await fixtures?.close();
  }, APP_CLOSE_TIMEOUT_MS);

  it('completes a request started under key A after the current key is B, and its history shows no plaintext', async () => {
    const { project, auth } = await fixtures.project({ credits: 10 });
    const secret = `bluebird-${randomUUID()}`;
    const first = await start(underA);
    const paused = await request(first.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: `lookup {"q":"${secret}"}`, tools: [lookup] },
    });
    expect(paused.status).toBe(200);
    expect(paused.body.status).toBe('requires_tool_outputs');
    await stop(first.api, first.worker);

    // Rotated: B is current, A still known. The workflow's history so far is under A.
    const second = await start(underB);
    const answered = await request(second.api.url, 'POST', `/v1/agent/${paused.body.id}/tool-outputs`, {
      headers: auth,
      body: {
        tool_outputs: [{ tool_call_id: paused.body.tool_calls[0].id, output: `output-${secret}` }],
        _compute_instance: paused.body._compute_instance,
      },
    });
    expect(answered.status).toBe(200);
    expect(answered.body.status).toBe('completed');

    const handle = raw.workflow.getHandle(agentRequestWorkflowId(paused.body.id));
    const history = await handle.fetchHistory();
    const payloads = payloadsOf(history);
    const keyIds = new Set(
      payloads
        .map((p) => p.metadata?.['encryption-key-id'])
        .filter(Boolean)
        .map((id) => Buffer.from(id!).toString('utf8')),
    );
    expect(keyIds).toEqual(new Set(['test-a', 'test-b']));
    const stored = JSON.stringify(history) + (await historyText(history));
    expect(stored).not.toContain(secret);
    expect(stored).not.toContain('bluebird');
    // The codec with both keys reads everything back.
    const decrypted = await historyText(
      history,
      new AesGcmPayloadCodec(
        new Map([
          ['test-a', keyA],
          ['test-b', keyB],
        ]),
        'test-b',
      ),
    );
    expect(decrypted).toContain(secret);
    expect(decrypted).toContain(`output-${secret}`);
    // Search attributes stay plain: operators still find a project's requests.
    const description = await handle.describe();
    expect(description.searchAttributes.ProjectId).toEqual([project.id]);
  });
});
