import type { AwsCredentials, ChatMessage, ModelProvider, ModelProviderSettings, ToolSpec } from '#libs/contracts';

export type { ModelProvider } from '#libs/contracts';

/** One call to a language model, provider-neutral. */
export interface ModelRequest {
  provider: ModelProvider;
  model: string;
  /** The provider's API base URL; null for its default (openai: with a base URL, any OpenAI-compatible server). */
  baseUrl: string | null;
  /** Hosts, addresses or CIDRs the base URL may be on although not public: the operator's
   * MODEL_ALLOW_HOSTS. The call goes through libs/egress, which refuses every other non-public address. */
  allowHosts: readonly string[];
  /** The customer's key: never put it in an error message or log. */
  apiKey: string | null;
  /** The provider's own settings (region, resource name, API version). */
  settings?: ModelProviderSettings;
  /** bedrock: AWS credentials, when it signs with SigV4 rather than a Bedrock API key. Secret like the key. */
  awsCredentials?: AwsCredentials | null;
  messages: readonly ChatMessage[];
  tools: readonly ToolSpec[];
  maxOutputTokens?: number;
  signal?: AbortSignal;
  /** Called with each text delta as the provider streams it; when given, use the provider's streaming protocol. */
  onToken?: (text: string) => void;
}
