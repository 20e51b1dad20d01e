import type { ChatMessage, ToolSpec } from '#libs/contracts';

/** The providers an agent can use. */
export type ModelProvider = 'openai' | 'anthropic' | 'scripted';

/** One call to a language model, provider-neutral. */
export interface ModelRequest {
  provider: ModelProvider;
  model: string;
  /** Defaults to https://api.openai.com/v1 (openai) and https://api.anthropic.com (anthropic). */
  baseUrl: string | null;
  /** The customer's key: never put it in an error message or log. */
  apiKey: string | null;
  messages: readonly ChatMessage[];
  tools: readonly ToolSpec[];
  maxOutputTokens?: number;
  signal?: AbortSignal;
  /** Called with each text delta as the provider streams it; when given, use the provider's streaming protocol. */
  onToken?: (text: string) => void;
}
