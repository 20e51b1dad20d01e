import { e2eStack } from '../support/e2e-stack.js';
import { request } from '../support/http.js';

describe('API reference', () => {
  const stack = e2eStack({ name: 'openapi', worker: false });

  it('serves OpenAPI 3.1 for the /v1 surface at /v1/openapi.json, without a key', async () => {
    const res = await request(stack.api.url, 'GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    expect(Object.keys(doc.paths).sort()).toEqual(
      expect.arrayContaining([
        '/v1/agent',
        '/v1/agent/{id}',
        '/v1/agent/{id}/tool-outputs',
        '/v1/agent/{id}/events',
        '/v1/files/{id}',
        '/v1/sessions',
        '/v1/sessions/{id}',
        '/v1/sessions/{id}/messages',
      ]),
    );
    expect(doc.paths['/v1/sessions'].post.responses['429'].description).toBe('`rate_limited`, `session_limit_reached`');
    const post = doc.paths['/v1/agent'].post;
    expect(post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/AgentRequest' });
    expect(Object.keys(post.responses).sort()).toEqual([
      '200',
      '400',
      '401',
      '402',
      '403',
      '409',
      '413',
      '429',
      '502',
      '503',
    ]);
    expect(post.responses['429'].description).toContain('`rate_limited`');
    expect(post.responses['429'].description).toContain('`quota_exceeded`');
    expect(Object.keys(post.responses['200'].headers)).toEqual([
      'X-Request-Id',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
    ]);
    expect(doc.components.schemas.AgentResponse.required).toEqual([
      'id',
      'object',
      'status',
      'capabilities_used',
      'files',
      'usage',
      'meta',
      '_compute_instance',
    ]);
    expect(doc.components.schemas.ToolDefinition.properties.name).toEqual({
      type: 'string',
      pattern: '^[a-zA-Z0-9_]+$',
      maxLength: 64,
    });
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('serves an interactive page at /docs, and the error page stays at /docs/errors', async () => {
    const page = await fetch(`${stack.api.url}/docs`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('swagger');
    const errors = await request(stack.api.url, 'GET', '/docs/errors');
    expect(errors.status).toBe(200);
    expect(errors.body).toContain('id="invalid_api_key"');
  });
});
