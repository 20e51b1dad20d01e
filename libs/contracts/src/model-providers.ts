/** The language-model providers a project can use (DESIGN 6 and 9). */
export const MODEL_PROVIDERS = ['openai', 'anthropic', 'google', 'mistral', 'azure-openai', 'bedrock', 'scripted'] as const;

export type ModelProvider = (typeof MODEL_PROVIDERS)[number];

export function isModelProvider(value: unknown): value is ModelProvider {
  return typeof value === 'string' && (MODEL_PROVIDERS as readonly string[]).includes(value);
}

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
