import { cachedLanguageModel, languageModel } from './language-model.js';
import type { ModelRequest } from './model-request.js';

const base = { model: 'm', messages: [], tools: [], allowHosts: [] } satisfies Partial<ModelRequest>;

describe('languageModel: which SDK client a configuration gets (no I/O)', () => {
  it("uses OpenAI's own client for api.openai.com and the OpenAI-compatible client for any other base URL", async () => {
    const official = await languageModel({ ...base, provider: 'openai', baseUrl: null, apiKey: 'sk-x' });
    const compatible = await languageModel({
      ...base,
      provider: 'openai',
      baseUrl: 'http://127.0.0.1:11434/v1',
      apiKey: null,
    });
    expect(official.constructor.name).toBe('OpenAIChatLanguageModel');
    expect(compatible.constructor.name).toBe('OpenAICompatibleChatLanguageModel');
  });

  it('builds each provider, the deployment (Azure) or the model id (Bedrock) as the model', async () => {
    const models = await Promise.all([
      languageModel({ ...base, provider: 'anthropic', baseUrl: null, apiKey: 'k' }),
      languageModel({ ...base, provider: 'google', baseUrl: null, apiKey: 'k' }),
      languageModel({ ...base, provider: 'mistral', baseUrl: null, apiKey: 'k' }),
      languageModel({
        ...base,
        provider: 'azure-openai',
        model: 'deploy-1',
        baseUrl: null,
        apiKey: 'k',
        settings: { resourceName: 'acme' },
      }),
      languageModel({
        ...base,
        provider: 'bedrock',
        model: 'amazon.nova-lite-v1:0',
        baseUrl: null,
        apiKey: null,
        settings: { region: 'eu-west-1' },
        awsCredentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      }),
    ]);
    expect(models.map((m) => [m.provider, m.modelId])).toEqual([
      ['anthropic.messages', 'm'],
      ['google.generative-ai', 'm'],
      ['mistral.chat', 'm'],
      ['azure.chat', 'deploy-1'],
      ['amazon-bedrock', 'amazon.nova-lite-v1:0'],
    ]);
  });

  it('reuses a model for the same configuration and builds another when anything differs, the key and the allow-list included', async () => {
    const request = { ...base, provider: 'mistral' as const, baseUrl: null, apiKey: 'k1' };
    const first = await cachedLanguageModel(request);
    expect(await cachedLanguageModel({ ...request })).toBe(first);
    expect(await cachedLanguageModel({ ...request, apiKey: 'k2' })).not.toBe(first);
    expect(await cachedLanguageModel({ ...request, model: 'other' })).not.toBe(first);
    expect(await cachedLanguageModel({ ...request, allowHosts: ['10.0.0.0/8'] })).not.toBe(first);
  });
});
