import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { request } from '../support/http.js';

/** How long the model takes: long enough that the first run still holds the api's only slot. */
const SLOW_MS = 3_000;

/**
 * Overload (issue 16): an api with API_MAX_RUNS_IN_FLIGHT runs waiting for their first stop lets
 * the next run wait API_RUN_WAIT_MS for a turn, then answers 503 service_unavailable with
 * Retry-After before anything starts: nothing admitted, nothing reserved, nothing charged.
 */
describe('overload: runs past API_MAX_RUNS_IN_FLIGHT', () => {
  const stack = e2eStack({ name: 'overload', env: { API_MAX_RUNS_IN_FLIGHT: '1', API_RUN_WAIT_MS: '300' } });

  it('answers 503 with Retry-After to the run that found no turn, and starts nothing for it', async () => {
    const { project, auth } = await stack.fixtures.project({ credits: 20, model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-test' } });
    stack.models.reply({ content: 'slow answer', delayMs: SLOW_MS });
    const first = request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'first' } });
    // The first run holds the slot once the model has its call.
    await eventually(async () => expect(stack.models.requests.length).toBe(1));
    const second = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'second' } });
    expect(second.status).toBe(503);
    expect(second.body).toMatchObject({ error: { code: 'service_unavailable', message: expect.any(String) } });
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await first).body).toMatchObject({ status: 'completed', message: 'slow answer' });
    // The refused run reserved nothing and never reached the model: one admission, one charge.
    const ledger: { kind: string }[] = await stack.fixtures.db.query(`select kind from credit_ledger where project_id = $1 order by kind`, [project.id]);
    expect(ledger.map((r) => r.kind)).toEqual(['reserve', 'settle']);
    expect(stack.models.requests).toHaveLength(1);
    expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(19);
    // Once the slot is free, the next run goes through.
    const third = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'third' } });
    expect(third.status).toBe(200);
  });
});
