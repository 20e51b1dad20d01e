import type { ChatMessage, ToolSpec } from '#libs/contracts';
import { startProviderServer, type ProviderServer, type WireProtocol } from '../../../test/support/provider-servers.js';
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
const key = 'sk-test-0123456789abcdefghij';
/** The servers are on loopback: allowed as an operator's MODEL_ALLOW_HOSTS would. */
const LOOPBACK = ['127.0.0.1'];
const aws = { accessKeyId: 'AKIDTEST0123456789', secretAccessKey: 'aws-secret-0123456789abcdefghij' };

async function failure(promise: Promise<unknown>): Promise<ModelError> {
  try {
    await promise;
  } catch (e) {
    if (e instanceof ModelError) return e;
    throw e;
  }
  throw new Error('expected a ModelError');
}

/** How each provider is configured against its local server, and where its wire format puts things. */
const PROVIDERS: Record<
  WireProtocol,
  {
    target: (s: ProviderServer) => Omit<ModelRequest, 'messages' | 'tools' | 'allowHosts'>;
    path: (stream: boolean) => string;
    credential: string;
  }
> = {
  google: {
    target: (s) => ({ provider: 'google', model: 'gemini-test', baseUrl: s.baseUrl, apiKey: key }),
    path: (stream) => `/v1beta/models/gemini-test:${stream ? 'streamGenerateContent' : 'generateContent'}`,
    credential: key,
  },
  mistral: {
    target: (s) => ({ provider: 'mistral', model: 'mistral-test', baseUrl: s.baseUrl, apiKey: key }),
    path: () => '/v1/chat/completions',
    credential: key,
  },
  'azure-openai': {
    target: (s) => ({
      provider: 'azure-openai',
      model: 'my-deployment',
      baseUrl: s.baseUrl,
      apiKey: key,
      settings: { apiVersion: 'v1' },
    }),
    path: () => '/openai/v1/chat/completions',
    credential: key,
  },
  bedrock: {
    target: (s) => ({
      provider: 'bedrock',
      model: 'anthropic.claude-test-v1:0',
      baseUrl: s.baseUrl,
      apiKey: null,
      settings: { region: 'eu-west-1' },
      awsCredentials: aws,
    }),
    path: (stream) => `/model/anthropic.claude-test-v1%3A0/${stream ? 'converse-stream' : 'converse'}`,
    credential: aws.accessKeyId,
  },
};

describe.each(Object.keys(PROVIDERS) as WireProtocol[])(
  'the %s provider through the AI SDK against a server speaking its wire format',
  (protocol) => {
    let server: ProviderServer;
    const { target, path, credential } = PROVIDERS[protocol];
    const request = (overrides: Partial<ModelRequest> = {}): ModelRequest => ({
      ...target(server),
      allowHosts: LOOPBACK,
      messages: question,
      tools,
      ...overrides,
    });

    beforeEach(async () => {
      server = await startProviderServer(protocol);
    });
    afterEach(async () => {
      await server.close();
    });

    it('sends the documented request and reads a JSON reply', async () => {
      server.reply({ content: 'It is two.', usage: { input: 12, output: 3 } });
      const turn = await callModel(request());
      expect(turn).toEqual({
        content: 'It is two.',
        toolCalls: [],
        usage: { inputTokens: 12, outputTokens: 3 },
        model: expect.any(String),
      });
      expect(server.requests).toHaveLength(1);
      const [sent] = server.requests;
      expect(decodeURIComponent(sent!.path)).toBe(decodeURIComponent(path(false)));
      switch (protocol) {
        case 'google':
          expect(sent!.headers['x-goog-api-key']).toBe(key);
          expect(sent!.body).toMatchObject({
            systemInstruction: { parts: [{ text: 'Be brief.' }] },
            contents: [{ role: 'user', parts: [{ text: 'What is 1+1?' }] }],
          });
          expect(sent!.body.tools[0].functionDeclarations[0].name).toBe('run_javascript');
          break;
        case 'mistral':
          expect(sent!.headers['authorization']).toBe(`Bearer ${key}`);
          expect(sent!.body).toMatchObject({
            model: 'mistral-test',
            messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user' }],
          });
          expect(sent!.body.tools[0].function.name).toBe('run_javascript');
          break;
        case 'azure-openai':
          expect(sent!.headers['api-key']).toBe(key);
          expect(sent!.body).toMatchObject({
            model: 'my-deployment',
            messages: [
              { role: 'system', content: 'Be brief.' },
              { role: 'user', content: 'What is 1+1?' },
            ],
          });
          break;
        case 'bedrock':
          // SigV4 with the stored credentials, scoped to the configured region.
          expect(sent!.headers['authorization']).toMatch(
            new RegExp(
              `^AWS4-HMAC-SHA256 Credential=${aws.accessKeyId}/\\d{8}/eu-west-1/bedrock/aws4_request, SignedHeaders=\\S+, Signature=[0-9a-f]{64}$`,
            ),
          );
          expect(sent!.body).toMatchObject({
            system: [{ text: 'Be brief.' }],
            messages: [{ role: 'user', content: [{ text: 'What is 1+1?' }] }],
          });
          expect(sent!.body.toolConfig.tools[0].toolSpec).toMatchObject({
            name: 'run_javascript',
            inputSchema: { json: tools[0]!.parameters },
          });
          break;
      }
    });

    it('streams when onToken is given: several tokens that concatenate to the content, then the usage', async () => {
      server.reply({ content: 'One plus one makes two, as expected.', usage: { input: 9, output: 8 } });
      const tokens: string[] = [];
      const turn = await callModel(request({ onToken: (t) => tokens.push(t) }));
      expect(turn).toMatchObject({
        content: 'One plus one makes two, as expected.',
        toolCalls: [],
        usage: { inputTokens: 9, outputTokens: 8 },
      });
      expect(tokens.length).toBeGreaterThan(3);
      expect(tokens.join('')).toBe(turn.content);
      expect(server.requests).toHaveLength(1);
      const sent = server.requests[0]!;
      if (protocol === 'google' || protocol === 'bedrock')
        expect(decodeURIComponent(sent.path)).toBe(decodeURIComponent(path(true)));
      else expect(sent.body.stream).toBe(true);
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

      // The tool call and its result go back in the provider's own shape.
      const sent = server.requests[1]!.body;
      switch (protocol) {
        case 'google':
          expect(sent.contents.slice(-2)).toEqual([
            {
              role: 'model',
              parts: [
                expect.objectContaining({
                  functionCall: expect.objectContaining({ name: 'run_javascript', args: call.arguments }),
                }),
              ],
            },
            {
              role: 'user',
              parts: [
                {
                  functionResponse: expect.objectContaining({
                    name: 'run_javascript',
                    response: expect.objectContaining({ name: 'run_javascript' }),
                  }),
                },
              ],
            },
          ]);
          expect(JSON.stringify(sent.contents.at(-1))).toContain('"2"');
          break;
        case 'mistral':
        case 'azure-openai':
          expect(sent.messages.slice(-2)).toEqual([
            expect.objectContaining({
              role: 'assistant',
              tool_calls: [
                expect.objectContaining({
                  id: call.id,
                  function: { name: 'run_javascript', arguments: JSON.stringify(call.arguments) },
                }),
              ],
            }),
            expect.objectContaining({ role: 'tool', tool_call_id: call.id, content: '2' }),
          ]);
          break;
        case 'bedrock':
          expect(sent.messages.slice(-2)).toEqual([
            {
              role: 'assistant',
              content: [{ toolUse: { toolUseId: call.id, name: 'run_javascript', input: call.arguments } }],
            },
            { role: 'user', content: [{ toolResult: { toolUseId: call.id, content: [{ text: '2' }] } }] },
          ]);
          break;
      }
    });

    it.each([false, true])(
      "fails a wrong credential at once, not retryable, in the service's words and with no secret (streaming: %s)",
      async (streaming) => {
        server.requireKey('the-right-key');
        const error = await failure(callModel(request({ onToken: streaming ? () => undefined : undefined })));
        const status = protocol === 'bedrock' ? 403 : 401;
        expect(error).toMatchObject({ kind: 'rejected', retryable: false, status });
        expect(error.message).toBe(
          status === 401
            ? `model provider ${protocol} refused the key (HTTP 401)`
            : `model provider ${protocol} denied the key access to the model (HTTP 403)`,
        );
        for (const secret of [key, aws.secretAccessKey, credential]) expect(error.message).not.toContain(secret);
        expect(error.message).not.toContain('0123456789');
        expect(server.requests).toHaveLength(1);
      },
    );

    it.each([
      [403, 'rejected', false],
      [400, 'rejected', false],
      [429, 'unavailable', true],
      [500, 'unavailable', true],
      [503, 'unavailable', true],
    ] as const)('maps HTTP %i to %s, in one HTTP request (the SDK does not retry)', async (status, kind, retryable) => {
      server.reply({ status, errorMessage: 'scripted failure' });
      const error = await failure(callModel(request()));
      expect(error).toMatchObject({ kind, retryable, status });
      expect(error.message).toMatch(new RegExp(`^model provider ${protocol} .* \\(HTTP ${status}\\)$`));
      expect(error.message).not.toContain('scripted failure');
      expect(server.requests).toHaveLength(1);
    });

    it('makes a stream cut before its end retryable', async () => {
      server.reply({ content: 'one two three four five six', failAfterEvents: 3 });
      const error = await failure(callModel(request({ onToken: () => undefined })));
      expect(error).toMatchObject({ kind: 'unavailable', retryable: true });
    });

    it("carries the caller's abort to the HTTP call, and maps a timeout signal to unavailable", async () => {
      server.reply({ content: 'late', delayMs: 5000 }, { content: 'late', delayMs: 5000 });
      const controller = new AbortController();
      const reason = new Error('cancelled');
      setTimeout(() => controller.abort(reason), 50);
      await expect(callModel(request({ signal: controller.signal }))).rejects.toBe(reason);

      const error = await failure(callModel(request({ signal: AbortSignal.timeout(50), onToken: () => undefined })));
      expect(error).toMatchObject({
        kind: 'unavailable',
        retryable: true,
        message: `model provider ${protocol} did not answer in time`,
      });
      // Both connections were closed by the client before the server answered.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(server.abortedRequests).toBe(2);
    });
  },
);

describe('provider settings on the wire', () => {
  it('azure-openai with a dated API version calls the deployment URL with api-version', async () => {
    const server = await startProviderServer('azure-openai');
    try {
      await callModel({
        provider: 'azure-openai',
        model: 'gpt4o-prod',
        baseUrl: server.baseUrl,
        allowHosts: LOOPBACK,
        apiKey: key,
        settings: { apiVersion: '2024-10-21' },
        messages: question,
        tools: [],
      });
      expect(server.requests[0]).toMatchObject({ path: '/openai/deployments/gpt4o-prod/chat/completions' });
      expect(server.requests[0]!.query.get('api-version')).toBe('2024-10-21');
    } finally {
      await server.close();
    }
  });

  it('bedrock with a Bedrock API key sends it as a bearer token, and never reads the environment', async () => {
    const server = await startProviderServer('bedrock');
    try {
      server.requireKey('ABSK-bedrock-api-key');
      const turn = await callModel({
        provider: 'bedrock',
        model: 'amazon.nova-lite-v1:0',
        baseUrl: server.baseUrl,
        allowHosts: LOOPBACK,
        apiKey: 'ABSK-bedrock-api-key',
        settings: { region: 'us-east-1' },
        messages: question,
        tools: [],
      });
      expect(turn.content).toBe('You said: "What is 1+1?"');
      expect(server.requests[0]!.headers['authorization']).toBe('Bearer ABSK-bedrock-api-key');
    } finally {
      await server.close();
    }
  });

  it('refuses a configuration the set-time checks would have refused, as rejected', async () => {
    const base = { baseUrl: null, allowHosts: [], apiKey: key, messages: question, tools: [] };
    await expect(callModel({ ...base, provider: 'bedrock', model: 'm' })).rejects.toMatchObject({
      kind: 'rejected',
      message: 'bedrock needs a region',
    });
    await expect(callModel({ ...base, provider: 'azure-openai', model: 'd' })).rejects.toMatchObject({
      kind: 'rejected',
      message: 'azure-openai needs a resource name or a base URL',
    });
  });
});
