import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { agentRequestWorkflowId, sessionWorkflowId } from '#libs/contracts';
import { testConfig } from '../support/config.js';
import { e2eStack } from '../support/e2e-stack.js';
import { request } from '../support/http.js';
import { connectTemporalRaw } from '../support/temporal.js';

// Conversation size (DESIGN.md section 9): whatever the inputs within the limits of section 7, no
// request's or session's Temporal history passes 1 MB, because conversations, tool outputs and
// input files travel by reference. Each case asserts the status, the answer and the history size
// that Temporal reports for the workflow (historySizeInBytes of its description).
const config = testConfig();
const MB = 1024 * 1024;
const HISTORY_LIMIT = MB;

describe('conversation size', () => {
  const stack = e2eStack({ name: 'sizes', env: { FETCH_URL_ALLOW_HOSTS: '127.0.0.1' } });
  let pages: Server;
  let pagesUrl: string;
  let connection: Connection;
  let temporal: Client;

  beforeAll(async () => {
    // A web site of pages of 100,000 characters each, for fetch_url.
    pages = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`${req.url} `.padEnd(100_000, 'p'));
    });
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    pagesUrl = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
    connection = await connectTemporalRaw(config);
    temporal = new Client({ connection, namespace: config.temporal.namespace });
  });
  afterAll(async () => {
    await connection?.close();
    await new Promise((resolve) => pages?.close(resolve));
  });

  const modelProject = (credits = 100) =>
    stack.fixtures.project({
      credits,
      model: { provider: 'openai', model: 'gpt-test', baseUrl: stack.models.url, apiKey: 'sk-sizes' },
    });
  const historySize = async (workflowId: string, runId?: string): Promise<number> => {
    const description = await temporal.workflow.getHandle(workflowId, runId).describe();
    return Number(description.raw.workflowExecutionInfo?.historySizeBytes ?? Number.NaN);
  };
  const modelCalls = () => stack.models.requests.filter((r) => r.path.endsWith('/chat/completions'));

  it('documents: 9 input files of 1 MB, all read in one model turn', async () => {
    const { auth } = await modelProject();
    const files = Array.from({ length: 9 }, (_, i) => ({
      name: `part-${i + 1}.txt`,
      content: `part ${i + 1} `.padEnd(MB - 64, String(i + 1)),
    }));
    stack.models.clearReplies();
    stack.models.reply(
      { toolCalls: files.map((f) => ({ name: 'read_file', arguments: { name: f.name } })) },
      { content: 'I read all nine parts.' },
    );
    const before = modelCalls().length;
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'Read every part.', capabilities: ['documents'], files },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'completed',
      message: 'I read all nine parts.',
      capabilities_used: ['chat', 'documents'],
    });
    // The model saw every part's text (100,000 characters of each).
    const last = modelCalls().slice(before).at(-1)!.body.messages as { role: string; content: string }[];
    const toolResults = last.filter((m) => m.role === 'tool');
    expect(toolResults).toHaveLength(9);
    for (const [i, m] of toolResults.entries())
      expect(m.content).toContain(`part ${i + 1} ${String(i + 1).repeat(1000)}`);
    const size = await historySize(agentRequestWorkflowId(res.body.id));
    process.stdout.write(`documents: history ${size} bytes\n`);
    expect(size).toBeLessThan(HISTORY_LIMIT);
  }, 120_000);

  it('research: 12 built-in tool calls returning 100,000 characters each', async () => {
    const { auth } = await modelProject();
    stack.models.clearReplies();
    const round = (r: number) => ({
      toolCalls: [1, 2, 3].map((i) => ({ name: 'fetch_url', arguments: { url: `${pagesUrl}/page-${r}-${i}` } })),
    });
    stack.models.reply(round(1), round(2), round(3), round(4), { content: 'Twelve pages fetched.' });
    const before = modelCalls().length;
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'Research twelve pages.', capabilities: ['research'] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'completed', capabilities_used: ['chat', 'research'] });
    // (followed by a note that web_search has no provider here)
    expect(res.body.message).toMatch(/^Twelve pages fetched\./);
    const last = modelCalls().slice(before).at(-1)!.body.messages as { role: string; content: string }[];
    const toolResults = last.filter((m) => m.role === 'tool');
    expect(toolResults).toHaveLength(12);
    for (const m of toolResults) expect(m.content.length).toBeGreaterThanOrEqual(100_000);
    const size = await historySize(agentRequestWorkflowId(res.body.id));
    process.stdout.write(`research: history ${size} bytes\n`);
    expect(size).toBeLessThan(HISTORY_LIMIT);
  }, 120_000);

  it('custom tools: 12 rounds of 100 KB outputs', async () => {
    const { auth } = await stack.fixtures.project({ credits: 10 });
    const lookup = {
      name: 'lookup',
      description: 'Look something up',
      parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    };
    let res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'lookup {"q":"all"} rounds:12', tools: [lookup] },
    });
    for (let round = 1; round <= 12; round++) {
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('requires_tool_outputs');
      const output = `round ${round} `.padEnd(102_400, 'o');
      res = await request(stack.api.url, 'POST', `/v1/agent/${res.body.id}/tool-outputs`, {
        headers: auth,
        body: {
          tool_outputs: [{ tool_call_id: res.body.tool_calls[0].id, output }],
          _compute_instance: res.body._compute_instance,
        },
      });
    }
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    expect(res.body.message).toContain(`lookup: round 12 ooo`);
    const size = await historySize(agentRequestWorkflowId(res.body.id));
    process.stdout.write(`custom tools: history ${size} bytes\n`);
    expect(size).toBeLessThan(HISTORY_LIMIT);
  }, 120_000);

  it('sessions: 49 messages of 100,000 characters (the new one and the 48 before it) reach the model, across continue-as-new', async () => {
    const { auth } = await modelProject(100);
    stack.models.clearReplies();
    const session = (await request(stack.api.url, 'POST', '/v1/sessions', { headers: auth })).body;
    const workflowId = sessionWorkflowId(session.id);
    const firstRunId = (await temporal.workflow.getHandle(workflowId).describe()).runId;
    const text = (n: number) => `message ${n} `.padEnd(100_000, 'm');
    // 26 messages: the last one reaches the model with the 48 messages before it (the window opens
    // at a user message: the first exchange drops out whole).
    for (let n = 1; n <= 26; n++) {
      const before = modelCalls().length;
      const res = await request(stack.api.url, 'POST', `/v1/sessions/${session.id}/messages`, {
        headers: auth,
        body: { message: text(n) },
      });
      expect({ n, status: res.status, code: res.body?.error?.code }).toEqual({ n, status: 200, code: undefined });
      expect(res.body.message).toBe(`You said: "${text(n)}"`);
      const seen = modelCalls().slice(before).at(-1)!.body.messages as { role: string; content: string }[];
      expect(seen).toHaveLength(Math.min(2 * (n - 1), 48) + 1);
      if (n === 26) {
        expect(seen[0]).toEqual({ role: 'user', content: text(2) });
        expect(seen.at(-2)).toEqual({ role: 'assistant', content: `You said: "${text(25)}"` });
      }
      const childSize = await historySize(agentRequestWorkflowId(res.body.id));
      process.stdout.write(
        `session message ${n}: request history ${childSize} bytes, session run ${await historySize(workflowId)} bytes\n`,
      );
      expect({ n, childSize, under: childSize < HISTORY_LIMIT }).toMatchObject({ n, under: true });
      // Keep the recorded bodies (5 MB each) from piling up.
      stack.models.requests.splice(0);
    }
    const read = await request(stack.api.url, 'GET', `/v1/sessions/${session.id}`, { headers: auth });
    expect(read.body).toMatchObject({ status: 'active', message_count: 52 });
    // The session continued as new, and no run of it passed the limit.
    const current = await temporal.workflow.getHandle(workflowId).describe();
    expect(current.runId).not.toBe(firstRunId);
    const runs: string[] = [];
    for await (const run of temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push(run.runId);
    expect(runs.length).toBeGreaterThan(1);
    const sizes = await Promise.all(runs.map((runId) => historySize(workflowId, runId)));
    process.stdout.write(`session: ${runs.length} runs, history sizes ${sizes.join(', ')} bytes\n`);
    for (const size of sizes) expect(size).toBeLessThan(HISTORY_LIMIT);
  }, 600_000);
});
