import { createServer } from 'node:net';
import type { ChatMessage, ToolSpec } from '#libs/contracts';
import { startModelServer, type ModelServer } from '../../../test/support/model-server.js';
import { callModel, ModelError, type ModelRequest } from './index.js';

const tools: ToolSpec[] = [
  {
    name: 'run_javascript',
    description: 'Runs JavaScript',
    parameters: { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] },
  },
];
const question: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'What is 1+1?' },
];

// A port that was just free: connecting to it is refused.
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function failure(promise: Promise<unknown>): Promise<ModelError> {
  try {
    await promise;
  } catch (e) {
    if (e instanceof ModelError) return e;
    throw e;
  }
  throw new Error('expected a ModelError');
}

describe.each(['openai', 'anthropic'] as const)('the %s adapter against a scripted model server', (provider) => {
  let server: ModelServer;
  const key = 'sk-test-0123456789abcdefghij';
  const request = (overrides: Partial<ModelRequest> = {}): ModelRequest => ({
    provider,
    model: 'test-model',
    baseUrl: provider === 'openai' ? server.url : server.origin,
    // The scripted server is on loopback: allowed as an operator's MODEL_ALLOW_HOSTS would.
    allowHosts: ['127.0.0.1'],
    apiKey: key,
    messages: question,
    tools,
    ...overrides,
  });

  beforeEach(async () => {
    server = await startModelServer();
  });
  afterEach(async () => {
    await server.close();
  });

  it('sends the protocol request and reads a JSON reply', async () => {
    server.reply({ content: 'It is two.', usage: { input: 12, output: 3 } });
    const turn = await callModel(request());
    expect(turn).toEqual({
      content: 'It is two.',
      toolCalls: [],
      usage: { inputTokens: 12, outputTokens: 3 },
      model: 'test-model',
    });
    const [sent] = server.requests;
    if (provider === 'openai') {
      expect(sent).toMatchObject({ path: '/v1/chat/completions', headers: { authorization: `Bearer ${key}` } });
      expect(sent!.body.messages[0]).toEqual({ role: 'system', content: 'Be brief.' });
      expect(sent!.body.tools[0].function.name).toBe('run_javascript');
    } else {
      expect(sent).toMatchObject({
        path: '/v1/messages',
        headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      });
      // The SDK sends the documented block form of `system` and of message content.
      expect(sent!.body).toMatchObject({
        system: [{ type: 'text', text: 'Be brief.' }],
        max_tokens: 1024,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'What is 1+1?' }] }],
      });
      expect(sent!.body.tools[0].input_schema).toEqual(tools[0]!.parameters);
    }
    expect(sent!.body.stream).toBeUndefined();
  });

  it('streams when onToken is given: several tokens that concatenate to the content', async () => {
    server.reply({ content: 'One plus one makes two, as expected.', usage: { input: 9, output: 8 } });
    const tokens: string[] = [];
    const turn = await callModel(request({ onToken: (t) => tokens.push(t) }));
    expect(turn).toEqual({
      content: 'One plus one makes two, as expected.',
      toolCalls: [],
      usage: { inputTokens: 9, outputTokens: 8 },
      model: 'test-model',
    });
    expect(tokens.length).toBeGreaterThan(3);
    expect(tokens.join('')).toBe(turn.content);
    expect(server.requests[0]!.body.stream).toBe(true);
  });

  it.each([false, true])('completes a tool-call round trip (streaming: %s)', async (streaming) => {
    const tokens: string[] = [];
    const onToken = streaming ? (t: string): void => void tokens.push(t) : undefined;
    server.reply(
      { toolCalls: [{ name: 'run_javascript', arguments: { code: '1+1', nested: { a: [1, 2] } } }] },
      { content: 'The answer is 2.' },
    );

    const first = await callModel(request({ onToken }));
    expect(first.content).toBe('');
    expect(first.toolCalls).toEqual([
      { id: expect.any(String), name: 'run_javascript', arguments: { code: '1+1', nested: { a: [1, 2] } } },
    ]);

    const call = first.toolCalls[0]!;
    const messages: ChatMessage[] = [
      ...question,
      { role: 'assistant', content: first.content, toolCalls: first.toolCalls },
      { role: 'tool', toolCallId: call.id, name: call.name, content: '2' },
    ];
    const second = await callModel(request({ messages, onToken }));
    expect(second).toMatchObject({ content: 'The answer is 2.', toolCalls: [] });
    if (streaming) expect(tokens.join('')).toBe('The answer is 2.');

    const sent = server.requests[1]!.body.messages;
    if (provider === 'openai') {
      expect(sent.slice(-2)).toEqual([
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: call.id,
              type: 'function',
              function: { name: 'run_javascript', arguments: JSON.stringify(call.arguments) },
            },
          ],
        },
        { role: 'tool', tool_call_id: call.id, content: '2' },
      ]);
    } else {
      expect(sent.slice(-2)).toEqual([
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: call.id, name: 'run_javascript', input: call.arguments }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '2' }] },
      ]);
    }
  });

  it.each([false, true])(
    "fails a wrong key at once in the service's words, without the key or the provider's body (streaming: %s)",
    async (streaming) => {
      server.requireKey('the-right-key');
      const error = await failure(callModel(request({ onToken: streaming ? () => undefined : undefined })));
      expect(error).toMatchObject({ kind: 'rejected', retryable: false, status: 401 });
      expect(error.message).toBe(`model provider ${provider} refused the key (HTTP 401)`);
      expect(error.message).not.toContain(key);
      expect(error.message).not.toContain('0123456789');
      expect(JSON.stringify(error)).not.toContain(key);
    },
  );

  it.each([
    [500, 'unavailable'],
    [503, 'unavailable'],
    [429, 'unavailable'],
  ] as const)('makes HTTP %i retryable', async (status, kind) => {
    server.reply({ status, errorMessage: 'try again later' });
    const error = await failure(callModel(request()));
    expect(error).toMatchObject({ kind, retryable: true, status });
    expect(error.message).toMatch(new RegExp(`^model provider ${provider} .* \\(HTTP ${status}\\)$`));
    expect(error.message).not.toContain('try again later');
  });

  it.each([
    [403, 'rejected', false],
    [400, 'rejected', false],
    [429, 'unavailable', true],
    [500, 'unavailable', true],
  ] as const)(
    'maps HTTP %i to %s in one HTTP request: the SDK does not retry, the activity does',
    async (status, kind, retryable) => {
      server.reply({ status, errorMessage: 'scripted failure' });
      await expect(failure(callModel(request({ onToken: () => undefined })))).resolves.toMatchObject({
        kind,
        retryable,
        status,
      });
      expect(server.requests).toHaveLength(1);
    },
  );

  it('makes a stream cut before its end retryable', async () => {
    server.reply({ content: 'one two three four five six', failAfterEvents: 3 });
    const error = await failure(callModel(request({ onToken: () => undefined })));
    expect(error).toMatchObject({ kind: 'unavailable', retryable: true });
    expect(error.message).toMatch(
      new RegExp(`^model provider ${provider} (broke off its answer|ended its stream before the reply was complete)`),
    );
  });

  it('makes a refused connection retryable and unavailable', async () => {
    const origin = `http://127.0.0.1:${await closedPort()}`;
    const error = await failure(callModel(request({ baseUrl: provider === 'openai' ? `${origin}/v1` : origin })));
    expect(error).toMatchObject({
      kind: 'unavailable',
      retryable: true,
      message: `model provider ${provider} could not be reached (ECONNREFUSED)`,
    });
    expect(error.status).toBeUndefined();
  });

  it("stops at the caller's abort and maps a timeout signal to unavailable", async () => {
    server.reply({ content: 'late', delayMs: 5000 }, { content: 'late', delayMs: 5000 });
    const controller = new AbortController();
    const reason = new Error('cancelled');
    setTimeout(() => controller.abort(reason), 50);
    await expect(callModel(request({ signal: controller.signal }))).rejects.toBe(reason);

    const error = await failure(callModel(request({ signal: AbortSignal.timeout(50), onToken: () => undefined })));
    expect(error).toMatchObject({
      kind: 'unavailable',
      retryable: true,
      message: `model provider ${provider} did not answer in time`,
    });
  });
});
