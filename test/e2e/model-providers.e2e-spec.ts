import type { ModelConfigInput } from '#libs/accounts';
import { e2eStack } from '../support/e2e-stack.js';
import { request } from '../support/http.js';
import type { ScriptedReply } from '../support/model-server.js';
import { startProviderServer, type ProviderServer } from '../support/provider-servers.js';

/** A local server of one provider's wire format, as the tests drive it. */
interface Wire {
  reply(...replies: ScriptedReply[]): void;
  requireKey(key: string | undefined): void;
  readonly calls: number;
}

type Provider = 'openai' | 'anthropic' | 'google' | 'mistral' | 'azure-openai' | 'bedrock';

const weatherTool = {
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe.each<Provider>(['openai', 'anthropic', 'google', 'mistral', 'azure-openai', 'bedrock'])(
  'POST /v1/agent on a project whose model is %s',
  (provider) => {
    const stack = e2eStack({ name: `provider-${provider}` });
    let own: ProviderServer | undefined;
    let wire: Wire;
    // What `project set-model` stored, with the right secret or a wrong one.
    let model: (secret: string) => ModelConfigInput;

    beforeAll(async () => {
      const m = stack.models;
      if (provider === 'openai' || provider === 'anthropic') {
        wire = {
          reply: (...r) => m.reply(...r),
          requireKey: (k) => m.requireKey(k),
          get calls() {
            return m.requests.length;
          },
        };
        model = (secret) => ({
          provider,
          model: 'test-model',
          baseUrl: provider === 'openai' ? m.url : m.origin,
          apiKey: secret,
        });
        return;
      }
      const server = await startProviderServer(provider);
      own = server;
      wire = {
        reply: (...r) => server.reply(...r),
        requireKey: (k) => server.requireKey(k),
        get calls() {
          return server.requests.length;
        },
      };
      model = (secret) => {
        switch (provider) {
          case 'azure-openai':
            return {
              provider,
              model: 'my-deployment',
              baseUrl: server.baseUrl,
              settings: { apiVersion: 'v1' },
              apiKey: secret,
            };
          case 'bedrock':
            return {
              provider,
              model: 'amazon.nova-lite-v1:0',
              baseUrl: server.baseUrl,
              settings: { region: 'eu-west-1' },
              awsCredentials: { accessKeyId: secret, secretAccessKey: 'aws-secret-e2e-0123456789' },
            };
          default:
            return { provider, model: 'test-model', baseUrl: server.baseUrl, apiKey: secret };
        }
      };
    });
    afterAll(async () => {
      await own?.close();
    });
    afterEach(() => {
      wire.requireKey(undefined);
    });

    it('answers, and pauses for a custom tool with the arguments the model gave', async () => {
      const { auth } = await stack.fixtures.project({ model: model('KEYRIGHT0123456789') });
      wire.reply({ content: `Hello from ${provider}.`, usage: { input: 7, output: 4 } });
      const done = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'Say hello' } });
      expect(done.body).toMatchObject({ status: 'completed', message: `Hello from ${provider}.` });

      wire.reply({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] });
      const paused = await request(stack.api.url, 'POST', '/v1/agent', {
        headers: auth,
        body: { message: 'Weather in Oslo?', tools: [weatherTool] },
      });
      expect(paused.body).toMatchObject({
        status: 'requires_tool_outputs',
        tool_calls: [{ id: expect.any(String), name: 'get_weather', arguments: { city: 'Oslo' } }],
      });
    });

    it('fails a refused credential at once as compute_error (502), without the secret, charging nothing', async () => {
      const { auth, project } = await stack.fixtures.project({ credits: 10, model: model('KEYWRONG0123456789') });
      wire.requireKey('KEYRIGHT0123456789');
      const before = wire.calls;
      const res = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'hi' } });
      expect(res.status).toBe(502);
      expect(res.body.error).toMatchObject({
        code: 'compute_error',
        message: expect.stringMatching(/\(HTTP (401|403)\)$/),
      });
      expect(JSON.stringify(res.body)).not.toMatch(/KEYWRONG|KEYRIGHT|aws-secret/);
      expect(wire.calls - before).toBe(1);
      expect((await stack.fixtures.accounts.findProject(project.id)).creditBalance).toBe(10);
    });

    it('retries 429 and 5xx under the activity retry policy, then fails as compute_unavailable (502)', async () => {
      const { auth } = await stack.fixtures.project({ credits: 10, model: model('KEYRIGHT0123456789') });
      wire.reply(
        { status: 429, errorMessage: 'slow down' },
        { status: 500, errorMessage: 'boom' },
        { status: 503, errorMessage: 'overloaded' },
        { status: 503, errorMessage: 'overloaded' },
        { status: 503, errorMessage: 'overloaded' },
      );
      const before = wire.calls;
      const res = await request(stack.api.url, 'POST', '/v1/agent', { headers: auth, body: { message: 'hi' } });
      expect(res.status).toBe(502);
      expect(res.body.error).toMatchObject({ code: 'compute_unavailable' });
      // Each attempt is one HTTP request (the SDK does not retry); the activity's policy tried again.
      expect(wire.calls - before).toBeGreaterThan(1);
    });
  },
);
