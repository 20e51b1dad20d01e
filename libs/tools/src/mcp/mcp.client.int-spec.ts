import { createServer, type Socket } from 'node:net';
import { startMcpServer, type TestMcpServer } from '../../../../test/support/mcp-server.js';
import type { McpServerTarget } from '#libs/contracts';
import { callMcpTool, listMcpTools } from './mcp.client.js';

// The MCP client against the official SDK's McpServer over Streamable HTTP on 127.0.0.1.
describe('MCP client', () => {
  let mcp: TestMcpServer;
  const allowed = { allowHosts: ['127.0.0.1'] };
  const target = (patch: Partial<McpServerTarget> = {}): McpServerTarget => ({
    name: 'weather',
    url: mcp.url,
    tools: ['lookup', 'big', 'broken'],
    ...patch,
  });

  beforeAll(async () => {
    mcp = await startMcpServer();
  });
  afterAll(async () => {
    await mcp.close();
  });

  it('lists the allowed tools under mcp_<server>_<tool> with their schemas', async () => {
    const listed = await listMcpTools(target(), allowed);
    expect(listed.ok).toBe(true);
    if (!listed.ok) return;
    expect(listed.tools.map((t) => t.name)).toEqual(['mcp_weather_lookup', 'mcp_weather_big', 'mcp_weather_broken']);
    const lookup = listed.tools[0]!;
    expect(lookup.description).toBe('The weather forecast of a city.');
    expect(lookup.parameters).toMatchObject({
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
    });
    expect(lookup.parameters).not.toHaveProperty('$schema');
  });

  it('lists every tool when the operator named none', async () => {
    const listed = await listMcpTools(target({ tools: null }), allowed);
    expect(listed.ok && listed.tools.map((t) => t.name)).toEqual([
      'mcp_weather_lookup',
      'mcp_weather_big',
      'mcp_weather_broken',
      'mcp_weather_secret',
    ]);
  });

  it('calls a tool and returns its text, sending the configured header', async () => {
    const result = await callMcpTool(
      target({ headers: { authorization: 'Bearer mcp-token-1' } }),
      'lookup',
      '{"city":"Lyon"}',
      allowed,
    );
    expect(result).toEqual({ ok: true, output: 'Forecast for Lyon: sunny, 23 degrees (station MCP-7).' });
    expect(mcp.requests.at(-1)?.headers.authorization).toBe('Bearer mcp-token-1');
  });

  it('a tool error is an error result for the model', async () => {
    expect(await callMcpTool(target(), 'broken', {}, allowed)).toEqual({
      ok: false,
      error: 'The MCP tool broken (server "weather") reported an error: the backend is down',
    });
  });

  it('refuses a tool the operator did not allow, without calling the server', async () => {
    const before = mcp.calls.length;
    expect(await callMcpTool(target(), 'secret', {}, allowed)).toEqual({
      ok: false,
      error: 'The tool "secret" of the MCP server "weather" is not allowed for this project.',
    });
    expect(mcp.calls.length).toBe(before);
  });

  it('bounds a long result to the output limit', async () => {
    const result = await callMcpTool(target(), 'big', { chars: 5000 }, { ...allowed, maxOutputChars: 1000 });
    expect(result.ok && result.output.startsWith('big:bbb')).toBe(true);
    expect(result.ok && result.output).toContain(
      '[truncated: 4000 more characters not shown; the rest of the result is not shown]',
    );
  });

  it('a response over the byte limit is an error, not a crash', async () => {
    const result = await callMcpTool(target(), 'big', { chars: 200_000 }, { ...allowed, maxBytes: 50_000 });
    expect(result).toEqual({ ok: false, error: expect.stringContaining('could not be used') });
  });

  it("refuses loopback unless the operator allows it (fetch_url's SSRF guard)", async () => {
    const before = mcp.requests.length;
    const listed = await listMcpTools(target(), {});
    expect(listed).toEqual({
      ok: false,
      error: expect.stringContaining(
        `Refused to reach the MCP server at ${new URL(mcp.url).origin}: 127.0.0.1 is a loopback address.`,
      ),
    });
    const called = await callMcpTool(target(), 'lookup', { city: 'Lyon' }, {});
    expect(called).toEqual({ ok: false, error: expect.stringContaining('127.0.0.1 is a loopback address') });
    expect(mcp.requests.length).toBe(before);
  });

  it('a server that is down is an error result', async () => {
    const port = await freePort();
    const down = target({ url: `http://127.0.0.1:${port}/mcp` });
    expect(await callMcpTool(down, 'lookup', { city: 'Lyon' }, allowed)).toEqual({
      ok: false,
      error: expect.stringMatching(/^The MCP server "weather" could not be used: .*ECONNREFUSED/),
    });
    expect(await listMcpTools(down, allowed)).toEqual({ ok: false, error: expect.stringContaining('ECONNREFUSED') });
  });

  it('a server that never answers is cut at the time limit', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as { port: number }).port;
      const result = await callMcpTool(
        target({ url: `http://127.0.0.1:${port}/mcp` }),
        'lookup',
        { city: 'Lyon' },
        { ...allowed, timeoutMs: 300 },
      );
      expect(result).toEqual({ ok: false, error: 'The MCP server "weather" did not answer within 300 ms.' });
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
