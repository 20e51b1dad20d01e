import { modelTargetProblem, type ModelTarget } from './model-targets.js';

const target = (overrides: Partial<ModelTarget>): ModelTarget => ({
  provider: 'openai',
  model: 'm',
  baseUrl: null,
  settings: {},
  hasKey: true,
  hasAwsCredentials: false,
  ...overrides,
});

describe('modelTargetProblem: what set-model refuses', () => {
  it('accepts each provider with its own settings', () => {
    for (const ok of [
      target({}),
      target({ hasKey: false, baseUrl: 'http://127.0.0.1:11434/v1' }),
      target({ provider: 'anthropic' }),
      target({ provider: 'google' }),
      target({ provider: 'mistral' }),
      target({ provider: 'azure-openai', settings: { resourceName: 'acme-ai', apiVersion: '2024-10-21' } }),
      target({
        provider: 'azure-openai',
        baseUrl: 'https://gateway.example.com/openai',
        settings: { apiVersion: 'v1' },
      }),
      target({ provider: 'bedrock', settings: { region: 'us-gov-west-1' }, hasKey: false, hasAwsCredentials: true }),
      target({ provider: 'bedrock', settings: { region: 'eu-central-1' } }),
      target({ provider: 'scripted', hasKey: false }),
    ]) {
      expect(modelTargetProblem(ok)).toBeNull();
    }
  });

  it.each([
    [
      { provider: 'gemini' },
      'unknown provider "gemini" (providers: openai, anthropic, google, mistral, azure-openai, bedrock, scripted)',
    ],
    [{ model: ' ' }, 'a model name is required'],
    [{ settings: { region: 'us-east-1' } }, 'region does not apply to provider "openai"'],
    [
      { provider: 'bedrock', settings: { resourceName: 'x', region: 'us-east-1' } },
      'resource name does not apply to provider "bedrock"',
    ],
    [{ hasAwsCredentials: true }, 'AWS credentials apply to provider "bedrock" only'],
    [
      { provider: 'azure-openai', settings: { resourceName: 'acme' }, baseUrl: 'https://x.example.com' },
      'give azure-openai a resource name or a base URL, not both',
    ],
    [
      { provider: 'azure-openai', settings: { resourceName: 'acme' }, hasKey: false },
      'provider "azure-openai" needs a model key',
    ],
    [
      { provider: 'bedrock', settings: { region: 'us-east-1' }, hasKey: false },
      'provider "bedrock" needs AWS credentials or a Bedrock API key',
    ],
    [{ provider: 'scripted' }, 'the scripted model takes no key'],
    [{ baseUrl: 'not a url' }, 'base URL "not a url" is not a URL'],
  ] as [Partial<ModelTarget>, string][])('refuses %j: %s', (overrides, problem) => {
    expect(modelTargetProblem(target(overrides))).toBe(problem);
  });
});
