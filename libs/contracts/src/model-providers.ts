/** The language-model providers a project can use (DESIGN 6 and 9). */
export const MODEL_PROVIDERS = [
  'openai',
  'anthropic',
  'google',
  'mistral',
  'azure-openai',
  'bedrock',
  'scripted',
] as const;

export type ModelProvider = (typeof MODEL_PROVIDERS)[number];

export function isModelProvider(value: unknown): value is ModelProvider {
  return typeof value === 'string' && (MODEL_PROVIDERS as readonly string[]).includes(value);
}

/** What each provider reaches, which settings it takes and how it authenticates (docs/operator-cli.md, CLI
 * help; here rather than in libs/llm so that the CLI's help loads none of the service's libs). */
export const PROVIDER_GUIDE: Readonly<Record<ModelProvider, string>> = {
  openai:
    'OpenAI Chat Completions (@ai-sdk/openai); with --base-url any OpenAI-compatible server (@ai-sdk/openai-compatible: Ollama, vLLM, llama.cpp), key optional there',
  anthropic: 'Anthropic Messages API (@ai-sdk/anthropic); --base-url is the API origin (a proxy)',
  google:
    'Google Gemini API (@ai-sdk/google, generateContent); --base-url defaults to https://generativelanguage.googleapis.com/v1beta',
  mistral: 'Mistral chat completions (@ai-sdk/mistral); --base-url defaults to https://api.mistral.ai/v1',
  'azure-openai':
    'Azure OpenAI (@ai-sdk/azure, chat completions); --model is the deployment name, --resource or --base-url, --api-version v1 (default) or a dated version',
  bedrock:
    'Amazon Bedrock Converse API (@ai-sdk/amazon-bedrock); --region required; AWS credentials (SigV4) or a Bedrock API key',
  scripted: 'the deterministic offline model (tests, the demo); no key',
};

/** The same guide in the console's words: its form's fields, not the CLI's flags (issue 48). */
export const PROVIDER_GUIDE_CONSOLE: Readonly<Record<ModelProvider, string>> = {
  openai:
    'OpenAI. With a Base URL, any OpenAI-compatible server (Ollama, vLLM, llama.cpp, a gateway); the API key is optional there.',
  anthropic: "Anthropic's Messages API. A Base URL is only for a proxy in front of it.",
  google: 'Google Gemini. The Base URL defaults to https://generativelanguage.googleapis.com/v1beta.',
  mistral: 'Mistral. The Base URL defaults to https://api.mistral.ai/v1.',
  'azure-openai':
    "Azure OpenAI. Model is your deployment's name; fill in Resource (as in https://<resource>.openai.azure.com) or a Base URL; API version v1 (the default) or a dated version such as 2024-10-21.",
  bedrock:
    'Amazon Bedrock. Region is required (for example us-east-1); the API key is a Bedrock API key (AWS access keys instead are set by your service operator).',
  scripted: 'A built-in offline model that answers from a script (tests and demos); no key.',
};

/** A provider's own settings, none of them secret (stored in plain text beside the model name). */
export interface ModelProviderSettings {
  /** bedrock: the AWS region, e.g. `us-east-1`. */
  readonly region?: string;
  /** azure-openai: the resource name, as in `https://<resource>.openai.azure.com`. */
  readonly resourceName?: string;
  /** azure-openai: `v1` (the default: the v1 API) or a dated version such as `2024-10-21` (deployment URLs). */
  readonly apiVersion?: string;
}

/** AWS credentials for bedrock (SigV4); stored encrypted like a model key. */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}
