import { request } from '../support/http.js';
import { e2eStack } from '../support/e2e-stack.js';

// Capabilities do real work: the scripted model calls the built-in tool named in the message
// (with the JSON after its name as arguments) and summarises its result.
describe('capabilities', () => {
  const stack = e2eStack({ name: 'capabilities' });

  it('code: runs JavaScript in the sandbox, reports the capability and charges its surcharge', async () => {
    const { auth } = await stack.fixtures.project({ credits: 20 });
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'run_javascript {"code":"console.log(6*7); [1,2,3].map(x => x * 2)"}', capabilities: ['code'] },
    });
    expect(res.status).toBe(200);
    expect(res.body.message).toContain('42');
    expect(res.body.message).toContain('[2,4,6]');
    expect(res.body.capabilities_used).toEqual(['chat', 'code']);
    // 3 reserved (1 + code 2), 3 charged.
    expect(res.body.usage).toMatchObject({ credits_this_request: 3, credits_remaining: 17 });
  });

  it('code: an infinite loop is a tool error the model sees, not a crashed worker', async () => {
    const { auth } = await stack.fixtures.project();
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'run_javascript {"code":"while(true){}"}', capabilities: ['code'] },
    });
    expect(res.status).toBe(200);
    expect(res.body.message).toMatch(/time|limit|interrupt/i);
    const after = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'run_javascript {"code":"1+1"}', capabilities: ['code'] },
    });
    expect(after.body.message).toContain('2');
  });

  it('data: SQL over an input CSV file', async () => {
    const { auth } = await stack.fixtures.project();
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: {
        message: 'query_data {"sql":"select sum(amount) as total from sales"}',
        capabilities: ['data'],
        files: [{ name: 'sales.csv', content: 'region,amount\nnorth,10\nsouth,32\n' }],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.message).toContain('42');
    expect(res.body.capabilities_used).toEqual(['chat', 'data']);
  });

  it('files: a written file comes back with content and a URL that downloads it with the same key only', async () => {
    const { auth } = await stack.fixtures.project();
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'write_file {"name":"notes.md","content":"# Notes\\nhello"}', capabilities: ['files'] },
    });
    expect(res.status).toBe(200);
    expect(res.body.capabilities_used).toEqual(['chat', 'files']);
    expect(res.body.files).toEqual([
      {
        name: 'notes.md',
        content: '# Notes\nhello',
        url: expect.stringMatching(new RegExp(`^${stack.config.publicBaseUrl}/v1/files/[0-9a-f-]{36}$`)),
      },
    ]);
    const path = new URL(res.body.files[0].url).pathname;
    const download = await fetch(`${stack.api.url}${path}`, { headers: auth });
    expect(download.status).toBe(200);
    expect(await download.text()).toBe('# Notes\nhello');
    const other = await stack.fixtures.project();
    const denied = await request(stack.api.url, 'GET', path, { headers: other.auth });
    expect(denied.status).toBe(404);
    expect(denied.body.error).toEqual({
      code: 'file_not_found',
      message: expect.any(String),
      docs: `${stack.config.publicBaseUrl}/docs/errors#file_not_found`,
    });
  });

  it('research: web_search is not offered without a provider, and the message says so', async () => {
    const { auth } = await stack.fixtures.project();
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'hello', capabilities: ['research'] },
    });
    expect(res.status).toBe(200);
    expect(res.body.message).toMatch(/web_search is not available/);
    expect(res.body.capabilities_used).toEqual(['chat']);
    expect(res.body.usage.credits_this_request).toBe(1);
  });

  it('research: fetch_url refuses a loopback address (checked after DNS resolution)', async () => {
    const { createServer } = await import('node:http');
    const server = createServer((_, res) => res.end('internal secret page'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    try {
      const { auth } = await stack.fixtures.project();
      const res = await request(stack.api.url, 'POST', '/v1/agent', {
        headers: auth,
        body: { message: `fetch_url {"url":"http://localhost:${port}/"}`, capabilities: ['research'] },
      });
      expect(res.status).toBe(200);
      expect(res.body.message).not.toContain('internal secret page');
      expect(res.body.message).toMatch(/refused|not allowed|loopback/i);
    } finally {
      server.close();
    }
  });
});
