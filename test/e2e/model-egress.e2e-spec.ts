import { e2eStack } from '../support/e2e-stack.js';
import { request } from '../support/http.js';

// Issue 44: a project's model base URL is egress (DESIGN.md section 11). With MODEL_ALLOW_HOSTS
// empty, as in production by default, a base URL on loopback (the scripted model server here) is
// refused by the worker before any connection: the owner's key never leaves, the tenant reads the
// refusal, and nothing is charged. Real api, worker, Temporal and PostgreSQL.
const stack = e2eStack({ name: 'model-egress', env: { MODEL_ALLOW_HOSTS: '' } });

describe('a model base URL on a non-public address', () => {
  it('is refused by the worker: no request reaches the server, the key stays, compute_error says why', async () => {
    const key = 'sk-owner-key-EGRESS0123456789';
    const { auth, project } = await stack.fixtures.project({
      credits: 10,
      model: { provider: 'openai', model: 'test-model', baseUrl: stack.models.url, apiKey: key },
    });
    stack.models.reply({ content: 'This reply must never be read.' });
    const res = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'hello' } });
    expect(res.status).toBe(502);
    expect(res.body.error).toMatchObject({
      code: 'compute_error',
      message: expect.stringContaining('127.0.0.1 is a loopback address'),
    });
    expect(res.body.error.message).toContain('MODEL_ALLOW_HOSTS');
    expect(JSON.stringify(res.body)).not.toContain(key);
    expect(JSON.stringify(res.body)).not.toContain('This reply must never be read.');
    expect(stack.models.requests).toHaveLength(0);
    expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(10);
    stack.models.clearReplies();
  });
});
