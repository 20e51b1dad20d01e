import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import type { ErrorCode } from '#libs/contracts';
import { testConfig } from '../support/config.js';
import { e2eStack } from '../support/e2e-stack.js';
import { request, type JsonResponse } from '../support/http.js';

// Hostile input (issue 14): authentication before the body, NUL and lone surrogates, file names
// outside Latin-1, and customer schemas that must not leak from one request into another.
const config = testConfig();
const env = { TEMPORAL_TASK_QUEUE: `e2e-hostile-${randomUUID()}` };
const NUL = '\u0000';
const LONE_HIGH = '\ud800';
const LONE_LOW = '\udc00';

function expectError(res: JsonResponse, status: number, code: ErrorCode, message?: RegExp): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(Object.keys(res.body.error).sort()).toEqual(['code', 'docs', 'message']);
  expect(res.body.error.docs).toBe(`${config.publicBaseUrl}/docs/errors#${code}`);
  if (message) expect(res.body.error.message).toMatch(message);
}

const tool = (overrides: Record<string, unknown> = {}) => ({
  name: 'lookup',
  description: 'Look something up',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
  ...overrides,
});

/** Sends the headers and the first bytes of a body announced as `announced` bytes, never the rest;
 * resolves with the status if the api answers before the body is complete. */
function answerBeforeBody(
  url: string,
  headers: Record<string, string>,
  announced: number,
  timeoutMs: number,
  path = '/v1/agent',
): Promise<number | 'no answer'> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'content-length': String(announced) },
    });
    const timer = setTimeout(() => {
      req.destroy();
      resolve('no answer');
    }, timeoutMs);
    req.on('response', (res) => {
      clearTimeout(timer);
      res.resume();
      req.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.write('{"message":"' + 'x'.repeat(64 * 1024));
  });
}

/**
 * Sends the head of a POST announcing `announced` bytes and the first 64 KB of its body, then
 * nothing more: what the server answered, and whether it closed the connection within 5 s (true)
 * or kept waiting for the rest of the body (false).
 */
function refusedUpload(
  url: string,
  path: string,
  announced: number,
  key?: string,
): Promise<{ head: string; closed: boolean }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let head = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ head, closed: false });
    }, 5000);
    socket.on('data', (chunk: Buffer) => (head += chunk.toString('latin1')));
    socket.on('end', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ head, closed: true });
    });
    socket.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    socket.write(
      `POST ${path} HTTP/1.1\r\nhost: ${hostname}:${port}\r\n${key ? `authorization: Bearer ${key}\r\n` : ''}` +
        `content-type: application/json\r\ncontent-length: ${announced}\r\n\r\n` +
        '{"message":"' +
        'x'.repeat(64 * 1024),
    );
  });
}

describe('hostile input', () => {
  const stack = e2eStack({ name: 'hostile', env });

  const post = (path: string, body: unknown, headers: Record<string, string>) =>
    request(stack.api.url, 'POST', path, { headers, body });
  const ledgerRows = async (projectId: string): Promise<number> =>
    Number(
      (
        await stack.fixtures.db.query(`select count(*)::int as n from credit_ledger where project_id = $1`, [projectId])
      )[0].n,
    );
  const blobRows = async (projectId: string): Promise<number> =>
    Number(
      (await stack.fixtures.db.query(`select count(*)::int as n from blobs where project_id = $1`, [projectId]))[0].n,
    );

  describe('authentication and the rate limit come before the body', () => {
    it.each([
      ['invalid JSON', '{"message": '],
      ['a JSON array', '["message"]'],
      ['an empty body', ''],
    ])('401 without a key for %s, on every /v1 POST', async (_, body) => {
      for (const path of [
        '/v1/agent',
        `/v1/agent/${randomUUID()}/tool-outputs`,
        '/v1/sessions',
        `/v1/sessions/${randomUUID()}/messages`,
      ]) {
        expectError(await post(path, body, {}), 401, 'invalid_api_key');
        expectError(
          await post(path, body, { authorization: `Bearer sk-mas_${'A'.repeat(43)}` }),
          401,
          'invalid_api_key',
        );
      }
    });

    it('401, not 413, for a body over 10 MB from an unknown key', async () => {
      const res = await post(
        '/v1/agent',
        { message: 'x'.repeat(10 * 1024 * 1024 + 10) },
        { authorization: `Bearer sk-mas_${'B'.repeat(43)}` },
      );
      expectError(res, 401, 'invalid_api_key');
    });

    it('answers an unknown key with 401 before the body has arrived', async () => {
      const status = await answerBeforeBody(
        stack.api.url,
        { authorization: `Bearer sk-mas_${'C'.repeat(43)}` },
        10 * 1024 * 1024,
        5000,
      );
      expect(status).toBe(401);
    });

    // Issue 28: outside /v1 the 10 MB parser read and parsed a 7 MB body before anything checked
    // who sent it. Announced as 10 MB, only the first 64 KB sent: an answer means the rest was not
    // waited for.
    it.each([
      ['the codec endpoint without its token', '/codec/decode', 401],
      ['the codec endpoint with a wrong token in the path', '/codec/not-the-token/decode', 401],
      ['an unknown route', '/no-such-route', 413],
      ['an unknown route under /v1 without a key', '/v1/no-such-route', 401],
      ['the error docs', '/docs/errors', 413],
    ])('answers %s before reading a body over 64 KB', async (_, path, status) => {
      expect(await answerBeforeBody(stack.api.url, {}, 10 * 1024 * 1024, 5000, path)).toBe(status);
    });

    // Issue 28: an unauthenticated flood of 7 MB bodies slowed every other project (the noisy
    // neighbour drill). A refusal answered before the body was read kept the connection alive, so
    // the api went on reading and discarding the rest of each body: now it closes the connection.
    it.each([
      ['an unknown key', '/v1/agent', 'sk-mas_' + 'D'.repeat(43), 401],
      ['no key', '/v1/agent', undefined, 401],
      ['the codec endpoint without its token', '/codec/decode', undefined, 401],
      ['an unknown route', '/no-such-route', undefined, 413],
    ])('closes the connection after refusing %s, not reading the rest of the body', async (_, path, key, status) => {
      const { head, closed } = await refusedUpload(stack.api.url, path, 7 * 1024 * 1024, key);
      expect(head.split('\r\n')[0]).toBe(`HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : 'Payload Too Large'}`);
      expect(head.toLowerCase()).toContain('\r\nconnection: close\r\n');
      expect(closed).toBe(true);
    });

    it('refuses a body over 64 KB on a route without authentication with payload_too_large, naming the limit', async () => {
      const res = await post('/no-such-route', { items: Array.from({ length: 8000 }, (_, i) => ({ i })) }, {});
      expectError(res, 413, 'payload_too_large', /64 KB/);
    });

    it('counts invalid-JSON requests toward the rate limit: the 61st is 429', async () => {
      const { auth } = await stack.fixtures.project();
      for (let i = 0; i < 60; i++) expectError(await post('/v1/agent', '{"message": ', auth), 400, 'invalid_body');
      const res = await post('/v1/agent', '{"message": ', auth);
      expectError(res, 429, 'rate_limited');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    });
  });

  describe("NUL and lone surrogates are refused with the field's code, recording nothing", () => {
    it.each([
      ["a NUL in a file's content", [{ name: 'a.txt', content: `a${NUL}b` }]],
      ["a NUL in a file's name", [{ name: `a${NUL}.txt`, content: 'x' }]],
      ["a lone high surrogate in a file's content", [{ name: 'a.txt', content: `a${LONE_HIGH}b` }]],
      ["a lone low surrogate in a file's name", [{ name: `a${LONE_LOW}.txt`, content: 'x' }]],
    ])('invalid_files for %s', async (_, files) => {
      const { auth, project } = await stack.fixtures.project();
      for (const path of ['/v1/agent'])
        expectError(
          await post(path, { message: 'read_file {"name":"a.txt"}', files }, auth),
          400,
          'invalid_files',
          /NUL|surrogate/,
        );
      expect(await ledgerRows(project.id)).toBe(0);
      expect(await blobRows(project.id)).toBe(0);
    });

    it.each([
      ['a NUL', `hello ${NUL} world`],
      ['only a NUL', NUL],
      ['a lone surrogate', `hello ${LONE_HIGH}`],
      ['a reversed surrogate pair', `${LONE_LOW}${LONE_HIGH}`],
    ])('invalid_body for %s in the message', async (_, message) => {
      const { auth, project } = await stack.fixtures.project();
      expectError(await post('/v1/agent', { message }, auth), 400, 'invalid_body', /message/);
      expectError(await post('/v1/agent', { message, stream: true }, auth), 400, 'invalid_body', /message/);
      expect(await ledgerRows(project.id)).toBe(0);
    });

    it.each([
      ['a NUL in the description', tool({ description: `Look ${NUL} up` })],
      ['a lone surrogate in the description', tool({ description: `Look ${LONE_HIGH} up` })],
      [
        'a NUL in a schema string',
        tool({ parameters: { type: 'object', properties: { q: { type: 'string', description: `q${NUL}` } } } }),
      ],
      [
        'a NUL in a schema key',
        tool({ parameters: { type: 'object', properties: { [`q${NUL}`]: { type: 'string' } } } }),
      ],
    ])('invalid_tools for %s', async (_, t) => {
      const { auth, project } = await stack.fixtures.project();
      expectError(await post('/v1/agent', { message: 'hi', tools: [t] }, auth), 400, 'invalid_tools', /NUL|surrogate/);
      expect(await ledgerRows(project.id)).toBe(0);
    });

    it('keeps a well-formed astral character (a surrogate pair) as it is', async () => {
      const { auth } = await stack.fixtures.project();
      const res = await post(
        '/v1/agent',
        { message: 'rocket \u{1F680} 报告', files: [{ name: '报告\u{1F680}.txt', content: 'ok \u{1F680}' }] },
        auth,
      );
      expect(res.status).toBe(200);
      expect(res.body.message).toContain('rocket \u{1F680} 报告');
    });

    it('refuses a session message the same way', async () => {
      const { auth, project } = await stack.fixtures.project();
      const session = await post('/v1/sessions', undefined, auth);
      expect(session.status).toBe(200);
      const path = `/v1/sessions/${session.body.id}/messages`;
      expectError(await post(path, { message: `hi${NUL}` }, auth), 400, 'invalid_body', /message/);
      expectError(
        await post(path, { message: 'hi', files: [{ name: 'a.txt', content: NUL }] }, auth),
        400,
        'invalid_files',
      );
      expect(await ledgerRows(project.id)).toBe(0);
      expect(
        (await request(stack.api.url, 'GET', `/v1/sessions/${session.body.id}`, { headers: auth })).body.message_count,
      ).toBe(0);
    });
  });

  describe('bodies and paths Express cannot read', () => {
    it.each([
      ['an unsupported charset', { 'content-type': 'application/json; charset=latin1' }],
      ['UTF-16', { 'content-type': 'application/json; charset=utf-16' }],
      ['an unknown content encoding', { 'content-encoding': 'x-unknown' }],
      ['a gzip body that is not gzip', { 'content-encoding': 'gzip' }],
    ])('invalid_body for %s, after authentication', async (_, headers) => {
      const { auth, project } = await stack.fixtures.project();
      expectError(await post('/v1/agent', '{"message":"hi"}', { ...auth, ...headers }), 400, 'invalid_body');
      expectError(await post('/v1/agent', '{"message":"hi"}', headers), 401, 'invalid_api_key');
      expect(await ledgerRows(project.id)).toBe(0);
    });

    it('not_found for a path that is not percent-encoded UTF-8', async () => {
      const { auth } = await stack.fixtures.project();
      for (const path of ['/v1/agent/%ED%A0%80', '/v1/sessions/%C0%AF', '/v1/files/%E6%8A']) {
        expectError(await request(stack.api.url, 'GET', path, { headers: auth }), 404, 'not_found', /percent-encoded/);
      }
    });
  });

  describe('deeply nested bodies', () => {
    const nested = (depth: number): unknown => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);

    it.each([
      ['an ignored field', (depth: number) => ({ message: 'hi', extra: nested(depth) })],
      [
        'a tool schema',
        (depth: number) => ({
          message: 'hi',
          tools: [tool({ parameters: { type: 'object', default: nested(depth) } })],
        }),
      ],
    ])('invalid_body for %s nested 100,000 levels deep, with or without an Idempotency-Key', async (_, body) => {
      const { auth, project } = await stack.fixtures.project();
      const text = JSON.stringify(body(1)).replace('[]', `${'['.repeat(100_000)}${']'.repeat(100_000)}`);
      expectError(await post('/v1/agent', text, auth), 400, 'invalid_body', /levels deep/);
      expectError(
        await post('/v1/agent', text, { ...auth, 'idempotency-key': randomUUID() }),
        400,
        'invalid_body',
        /levels deep/,
      );
      expect(await ledgerRows(project.id)).toBe(0);
    });

    it('accepts a tool schema nested 15 levels deep (31 levels of JSON), the most a tool schema may', async () => {
      const { auth } = await stack.fixtures.project();
      let schema: Record<string, unknown> = { type: 'string' };
      for (let i = 0; i < 15; i++) schema = { type: 'object', properties: { next: schema } };
      expect((await post('/v1/agent', { message: 'hi', tools: [tool({ parameters: schema })] }, auth)).status).toBe(
        200,
      );
    });
  });

  describe('tool outputs', () => {
    let auth: { authorization: string };
    let projectId: string;
    let paused: { id: string; instance: string; callId: string };
    beforeAll(async () => {
      const p = await stack.fixtures.project();
      auth = p.auth;
      projectId = p.project.id;
      const res = await post('/v1/agent', { message: 'please lookup {"q":"x"}', tools: [tool()] }, auth);
      expect(res.body.status).toBe('requires_tool_outputs');
      paused = { id: res.body.id, instance: res.body._compute_instance, callId: res.body.tool_calls[0].id };
    });
    const submit = (outputs: unknown[]) =>
      post(`/v1/agent/${paused.id}/tool-outputs`, { tool_outputs: outputs, _compute_instance: paused.instance }, auth);

    it.each([
      [
        'a NUL in an output over 64 KB (blob store)',
        () => [{ tool_call_id: paused.callId, output: `${'x'.repeat(70 * 1024)}${NUL}` }],
      ],
      ['a NUL in a short output', () => [{ tool_call_id: paused.callId, output: `a${NUL}b` }]],
      [
        'a lone surrogate in an output over 64 KB',
        () => [{ tool_call_id: paused.callId, output: `${'x'.repeat(70 * 1024)}${LONE_LOW}` }],
      ],
      ['a NUL in the tool_call_id', () => [{ tool_call_id: `${paused.callId}${NUL}`, output: 'b' }]],
    ])('invalid_tool_outputs for %s, and the request still waits', async (_, outputs) => {
      const before = await blobRows(projectId);
      expectError(await submit(outputs()), 400, 'invalid_tool_outputs', /NUL|surrogate/);
      expect(await blobRows(projectId)).toBe(before);
      expect((await request(stack.api.url, 'GET', `/v1/agent/${paused.id}`, { headers: auth })).body.status).toBe(
        'requires_tool_outputs',
      );
    });

    it('a well-formed output over 64 KB still completes the request', async () => {
      const res = await submit([{ tool_call_id: paused.callId, output: `${'y'.repeat(70 * 1024)} \u{1F680}` }]);
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('completed');
    });
  });

  describe('generated files', () => {
    it.each([
      ['a Chinese name', '报告.md', '__.md'],
      ['an astral character', 'rocket-\u{1F680}.txt', 'rocket-_.txt'],
      ['a percent sign, quotes and a semicolon', "50% 'off'; (final).txt", "50_ 'off'; (final).txt"],
      ['Latin-1 accents', 'résumé.txt', 'r_sum_.txt'],
    ])('%s is served with an RFC 6266 Content-Disposition', async (_, name, fallback) => {
      const { auth } = await stack.fixtures.project();
      const res = await post(
        '/v1/agent',
        { message: `write_file ${JSON.stringify({ name, content: 'hello' })}`, capabilities: ['files'] },
        auth,
      );
      expect(res.status).toBe(200);
      expect(res.body.files).toEqual([expect.objectContaining({ name, content: 'hello' })]);
      const download = await fetch(`${stack.api.url}${new URL(res.body.files[0].url).pathname}`, { headers: auth });
      expect(download.status).toBe(200);
      expect(await download.text()).toBe('hello');
      const disposition = download.headers.get('content-disposition') ?? '';
      const encoded = [...Buffer.from(name, 'utf8')]
        .map((b) =>
          /[A-Za-z0-9!#$&+.^_`|~-]/.test(String.fromCharCode(b))
            ? String.fromCharCode(b)
            : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
        )
        .join('');
      expect(disposition).toBe(`attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`);
      expect(decodeURIComponent(disposition.split("filename*=UTF-8''")[1]!)).toBe(name);
    });

    it('a text file whose content holds a NUL is stored and served byte for byte', async () => {
      const { auth } = await stack.fixtures.project();
      const res = await post(
        '/v1/agent',
        { message: 'write_file {"name":"nul.txt","content":"a\\u0000b"}', capabilities: ['files'] },
        auth,
      );
      expect(res.status).toBe(200);
      expect(res.body.capabilities_used).toEqual(['chat', 'files']);
      expect(res.body.files).toHaveLength(1);
      const download = await fetch(`${stack.api.url}${new URL(res.body.files[0].url).pathname}`, { headers: auth });
      expect(download.status).toBe(200);
      expect(Buffer.from(await download.arrayBuffer())).toEqual(Buffer.from('a\u0000b', 'utf8'));
    });
  });

  describe('customer tool schemas are compiled per request', () => {
    const withId = (id: string, property: string) =>
      tool({ parameters: { $id: id, type: 'object', properties: { [property]: { type: 'string' } } } });

    it('the same $id in two requests of one project, and in another project, is accepted each time', async () => {
      const a = await stack.fixtures.project();
      const b = await stack.fixtures.project();
      const id = `https://example.com/schemas/${randomUUID()}`;
      expect((await post('/v1/agent', { message: 'hi', tools: [withId(id, 'q')] }, a.auth)).status).toBe(200);
      expect((await post('/v1/agent', { message: 'hi', tools: [withId(id, 'q')] }, a.auth)).status).toBe(200);
      expect((await post('/v1/agent', { message: 'hi', tools: [withId(id, 'other')] }, b.auth)).status).toBe(200);
    });

    it('two tools of one request may share an $id', async () => {
      const { auth } = await stack.fixtures.project();
      const id = `urn:test:${randomUUID()}`;
      const res = await post(
        '/v1/agent',
        { message: 'hi', tools: [withId(id, 'q'), { ...withId(id, 'r'), name: 'second' }] },
        auth,
      );
      expect(res.status).toBe(200);
    });

    // Issue 28: a 2.2 MB schema of 25,000 properties was compiled, overflowed the stack after up to
    // 1.5 s of the api's CPU, and was answered "Maximum call stack size exceeded".
    it('a schema over the size limit is invalid_tools naming the limit, before it is compiled, nothing recorded', async () => {
      const { auth, project } = await stack.fixtures.project();
      const properties = Object.fromEntries(
        Array.from({ length: 25_000 }, (_, i) => [`field_${i}`, { type: 'string', description: 'a field' }]),
      );
      const res = await post(
        '/v1/agent',
        { message: 'hi', tools: [tool({ parameters: { type: 'object', properties } })] },
        auth,
      );
      expectError(res, 400, 'invalid_tools', /^tools\[0\]\.parameters is \d+ bytes of JSON; the limit is 16 KB/);
      expect(await ledgerRows(project.id)).toBe(0);
    });

    it('a schema of 1,200 empty properties (12 KB) is invalid_tools by its count of schemas, before it is compiled', async () => {
      const { auth } = await stack.fixtures.project();
      const properties = Object.fromEntries(Array.from({ length: 1200 }, (_, i) => [`p${i}`, {}]));
      const res = await post(
        '/v1/agent',
        { message: 'hi', tools: [tool({ parameters: { type: 'object', properties } })] },
        auth,
      );
      expectError(res, 400, 'invalid_tools', /more than 256 schemas/);
    });

    it('a schema whose $ref cannot be resolved is still invalid_tools', async () => {
      const { auth } = await stack.fixtures.project();
      const res = await post(
        '/v1/agent',
        {
          message: 'hi',
          tools: [tool({ parameters: { type: 'object', properties: { q: { $ref: '#/definitions/missing' } } } })],
        },
        auth,
      );
      expectError(res, 400, 'invalid_tools', /not a valid JSON Schema/);
    });
  });
});
