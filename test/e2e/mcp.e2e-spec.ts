import { McpServersService } from '#libs/accounts';
import { agentRequestWorkflowId } from '#libs/contracts';
import { AesGcmPayloadCodec } from '#libs/temporal';
import { e2eStack } from '../support/e2e-stack.js';
import { request } from '../support/http.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { readSse } from '../support/sse.js';
import { connectTemporal, historyText } from '../support/temporal.js';

// MCP servers (DESIGN.md section 9): a project's Streamable HTTP MCP server, here the official
// SDK's McpServer on loopback (allowed by FETCH_URL_ALLOW_HOSTS, like fetch_url), offers its
// allowed tools with the research capability as mcp_<server>_<tool>; the scripted model calls one
// and answers from its result. A server that fails gives the model an error result, never a failed run.
describe('MCP servers', () => {
  const stack = e2eStack({ name: 'mcp', env: { FETCH_URL_ALLOW_HOSTS: '127.0.0.1' } });
  let mcp: TestMcpServer;

  beforeAll(async () => {
    mcp = await startMcpServer();
  });
  afterAll(async () => {
    await mcp?.close();
  });

  const projectWith = async (
    servers: { name: string; url: string; tools?: string[]; header?: { name: string; value: string } }[],
  ) => {
    const project = await stack.fixtures.project({
      credits: 50,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-mcp' },
    });
    const registry = new McpServersService(stack.fixtures.db, stack.config, stack.fixtures.accounts);
    for (const server of servers)
      await registry.add(project.project.id, {
        url: server.url,
        name: server.name,
        tools: server.tools ?? null,
        header: server.header ?? null,
      });
    return project;
  };
  const modelCalls = () => stack.models.requests.filter((r) => r.path.endsWith('/chat/completions'));
  type Message = { role: string; content: string; tool_call_id?: string };

  it('the model calls an allowed MCP tool and answers from its result; charged and reported as research', async () => {
    const { auth } = await projectWith([
      {
        name: 'weather',
        url: mcp.url,
        tools: ['lookup', 'broken'],
        header: { name: 'Authorization', value: 'Bearer mcp-e2e-token' },
      },
    ]);
    stack.models.clearReplies();
    stack.models.reply(
      { toolCalls: [{ name: 'mcp_weather_lookup', arguments: { city: 'Lyon' } }] },
      { content: 'Lyon will be sunny at 23 degrees.' },
    );
    const before = modelCalls().length;
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'Weather in Lyon?', capabilities: ['research'] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'completed',
      message: expect.stringContaining('Lyon will be sunny at 23 degrees.'),
      capabilities_used: ['chat', 'research'],
    });
    // 1 + the research surcharge of 2.
    expect(res.body.usage).toMatchObject({ credits_this_request: 3, credits_remaining: 47 });

    const [first, second] = modelCalls().slice(before);
    const offered = (first!.body.tools as { function: { name: string; parameters: unknown } }[]).map((t) => t.function);
    expect(offered.map((t) => t.name)).toEqual(
      expect.arrayContaining(['fetch_url', 'mcp_weather_lookup', 'mcp_weather_broken']),
    );
    expect(offered.map((t) => t.name)).not.toContain('mcp_weather_secret');
    expect(offered.find((t) => t.name === 'mcp_weather_lookup')!.parameters).toMatchObject({
      type: 'object',
      properties: { city: { type: 'string' } },
    });
    const toolMessage = (second!.body.messages as Message[]).find((m) => m.role === 'tool');
    expect(toolMessage?.content).toBe('Forecast for Lyon: sunny, 23 degrees (station MCP-7).');
    expect(mcp.calls.at(-1)).toEqual({ tool: 'lookup', args: { city: 'Lyon' } });
    expect(mcp.requests.at(-1)!.headers.authorization).toBe('Bearer mcp-e2e-token');

    // Neither the auth header nor the result is in the workflow's history, decrypted.
    const { client, connection } = await connectTemporal(stack.config);
    try {
      const history = await client.workflow.getHandle(agentRequestWorkflowId(res.body.id)).fetchHistory();
      const text = await historyText(history, AesGcmPayloadCodec.fromConfig(stack.config));
      expect(text).toContain('mcp_weather_lookup');
      expect(text).not.toContain('mcp-e2e-token');
      expect(text).not.toContain('station MCP-7');
    } finally {
      await connection.close();
    }
  });

  it('streams tool_start and tool_end naming the MCP tool; a tool error reaches the model as an error result', async () => {
    const { auth } = await projectWith([{ name: 'weather', url: mcp.url, tools: ['lookup', 'broken'] }]);
    stack.models.clearReplies();
    stack.models.reply(
      { toolCalls: [{ name: 'mcp_weather_broken', arguments: {} }] },
      { content: 'The weather service failed.' },
    );
    const before = modelCalls().length;
    const res = await readSse(`${stack.api.url}/v1/agent`, {
      method: 'POST',
      headers: auth,
      body: { message: 'Try it.', stream: true, capabilities: ['research'] },
    });
    const start = res.events.find((e) => e.event === 'tool_start');
    const end = res.events.find((e) => e.event === 'tool_end');
    expect(start?.data).toEqual({ type: 'tool_start', tool: 'mcp_weather_broken', call_id: expect.any(String) });
    expect(end?.data).toEqual({
      type: 'tool_end',
      tool: 'mcp_weather_broken',
      call_id: start?.data.call_id,
      status: 'error',
      duration_ms: expect.any(Number),
    });
    expect(res.events.at(-1)?.event).toBe('done');
    const second = modelCalls().slice(before)[1]!;
    expect((second.body.messages as Message[]).find((m) => m.role === 'tool')?.content).toBe(
      'Error: The MCP tool broken (server "weather") reported an error: the backend is down',
    );
  });

  it('a server that fails after listing gives the model an error result, and the run completes', async () => {
    const { auth } = await projectWith([{ name: 'weather', url: mcp.url, tools: ['lookup'] }]);
    stack.models.clearReplies();
    stack.models.reply(
      { toolCalls: [{ name: 'mcp_weather_lookup', arguments: { city: 'Oslo' } }] },
      { content: 'The forecast is unavailable.' },
    );
    const before = modelCalls().length;
    mcp.failCalls = true;
    try {
      const res = await request(stack.api.url, 'POST', '/v1/agent', {
        headers: auth,
        body: { message: 'Weather in Oslo?', capabilities: ['research'] },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'completed',
        message: expect.stringContaining('The forecast is unavailable.'),
        capabilities_used: ['chat', 'research'],
      });
    } finally {
      mcp.failCalls = false;
    }
    const second = modelCalls().slice(before)[1]!;
    expect((second.body.messages as Message[]).find((m) => m.role === 'tool')?.content).toMatch(
      /^Error: The MCP server "weather" could not be used: /,
    );
  });

  it('a server that cannot be listed offers no tools, and the run completes', async () => {
    const down = await startMcpServer();
    await down.close();
    const { auth } = await projectWith([
      { name: 'gone', url: down.url },
      { name: 'weather', url: mcp.url, tools: ['lookup'] },
    ]);
    stack.models.clearReplies();
    stack.models.reply({ content: 'Answered without the missing server.' });
    const before = modelCalls().length;
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'Hello', capabilities: ['research'] },
    });
    expect(res.body).toMatchObject({
      status: 'completed',
      message: expect.stringContaining('Answered without the missing server.'),
    });
    const names = (modelCalls().slice(before)[0]!.body.tools as { function: { name: string } }[]).map(
      (t) => t.function.name,
    );
    expect(names).toContain('mcp_weather_lookup');
    expect(names.filter((n) => n.startsWith('mcp_gone_'))).toEqual([]);
  });

  it('offers MCP tools only with the research capability', async () => {
    const { auth } = await projectWith([{ name: 'weather', url: mcp.url }]);
    stack.models.clearReplies();
    stack.models.reply({ content: 'No tools here.' });
    const before = modelCalls().length;
    const listings = mcp.requests.length;
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'Hi', capabilities: ['code'] },
    });
    expect(res.body).toMatchObject({ status: 'completed', capabilities_used: ['chat'] });
    const names = (modelCalls().slice(before)[0]!.body.tools as { function: { name: string } }[]).map(
      (t) => t.function.name,
    );
    expect(names).toEqual(['run_javascript']);
    expect(mcp.requests.length).toBe(listings);
  });

  it('a result over 64 KB reaches the model by reference: the workflow history stays small', async () => {
    const { auth } = await projectWith([{ name: 'weather', url: mcp.url, tools: ['big'] }]);
    stack.models.clearReplies();
    stack.models.reply(
      { toolCalls: [{ name: 'mcp_weather_big', arguments: { chars: 90_000 } }] },
      { content: 'Read it all.' },
    );
    const before = modelCalls().length;
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'Big one', capabilities: ['research'] },
    });
    expect(res.body).toMatchObject({ status: 'completed', message: expect.stringContaining('Read it all.') });
    const tool = (modelCalls().slice(before)[1]!.body.messages as Message[]).find((m) => m.role === 'tool')!;
    expect(tool.content).toHaveLength(90_000);
    const { client, connection } = await connectTemporal(stack.config);
    try {
      const description = await client.workflow.getHandle(agentRequestWorkflowId(res.body.id)).describe();
      expect(Number(description.raw.workflowExecutionInfo?.historySizeBytes)).toBeLessThan(64 * 1024);
    } finally {
      await connection.close();
    }
  });
});
