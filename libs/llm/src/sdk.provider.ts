import type { ChatMessage, ModelTurn, ToolCall, ToolSpec } from '#libs/contracts';
import { tokenCount, toolArguments } from './json.js';
import { cachedLanguageModel, type LanguageModel, type SdkProvider } from './language-model.js';
import { ModelError } from './model-error.js';
import type { ModelRequest } from './model-request.js';
import { sdkFailure } from './provider-errors.js';

type CallOptions = Parameters<LanguageModel['doGenerate']>[0];
type Prompt = CallOptions['prompt'];
type FunctionTool = Extract<NonNullable<CallOptions['tools']>[number], { type: 'function' }>;
type Usage = Awaited<ReturnType<LanguageModel['doGenerate']>>['usage'];
type FinishReason = Awaited<ReturnType<LanguageModel['doGenerate']>>['finishReason'];
type ToolCallPart = { toolCallId: string; toolName: string; input: string };

/** The Messages API requires `max_tokens`; this is the default when the request sets none. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 1024;

/**
 * Runs one turn through the provider's AI SDK model: `doStream` when `onToken` is given, else
 * `doGenerate`. These are the SDK's provider interface (LanguageModelV3), which every provider
 * package implements; `generateText`/`streamText` on top add an agent loop, retries and telemetry
 * this service does elsewhere, and cost twice the CPU per call (docs/performance.md). Nothing here
 * retries: the activity's retry policy is the one place that decides. Tools are offered as
 * function definitions, so the model's calls come back to the agent loop.
 */
export async function callSdk(req: ModelRequest & { provider: SdkProvider }): Promise<ModelTurn> {
  const secrets = [req.apiKey, req.awsCredentials?.secretAccessKey, req.awsCredentials?.sessionToken];
  try {
    const model = await cachedLanguageModel(req);
    const maxOutputTokens =
      req.maxOutputTokens ?? (req.provider === 'anthropic' ? ANTHROPIC_DEFAULT_MAX_TOKENS : undefined);
    const options: CallOptions = {
      prompt: sdkPrompt(req.messages),
      ...(req.tools.length > 0 ? { tools: sdkTools(req.tools) } : {}),
      ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
      ...(req.signal ? { abortSignal: req.signal } : {}),
    };
    if (!req.onToken) {
      const result = await model.doGenerate(options);
      let content = '';
      const calls: ToolCallPart[] = [];
      for (const part of result.content) {
        if (part.type === 'text') content += part.text;
        else if (part.type === 'tool-call') calls.push(part);
        // Reasoning, sources and files carry nothing the agent loop uses.
      }
      return turnOf(content, calls, result.usage, result.response?.modelId || req.model);
    }
    return await streamTurn(req.provider, model, options, req.onToken, req.model);
  } catch (e) {
    throw sdkFailure(req.provider, e, req.signal, secrets);
  }
}

async function streamTurn(
  provider: SdkProvider,
  model: LanguageModel,
  options: CallOptions,
  onToken: (text: string) => void,
  requestedModel: string,
): Promise<ModelTurn> {
  const { stream } = await model.doStream(options);
  const reader = stream.getReader();
  let content = '';
  const calls: ToolCallPart[] = [];
  let modelId = requestedModel;
  let finish: { reason: FinishReason; usage: Usage } | undefined;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      const part = next.value;
      switch (part.type) {
        case 'text-delta':
          if (part.delta) {
            content += part.delta;
            onToken(part.delta);
          }
          break;
        case 'tool-call':
          calls.push(part);
          break;
        case 'response-metadata':
          if (part.modelId) modelId = part.modelId;
          break;
        case 'finish':
          finish = { reason: part.finishReason, usage: part.usage };
          break;
        case 'error':
          throw part.error;
        default:
          // Stream start, block boundaries, tool-input deltas (the whole call follows), reasoning.
          break;
      }
    }
  } finally {
    // Stopping early (an error part, the caller's abort) closes the connection.
    await reader.cancel().catch(() => undefined);
  }
  // A stream that stops without the provider's own finish reason was cut: a dropped connection, worth a retry.
  if (!finish || finish.reason.unified === 'error' || finish.reason.raw === undefined) {
    throw new ModelError(`model provider ${provider} ended its stream before the reply was complete`, {
      kind: 'unavailable',
    });
  }
  return turnOf(content, calls, finish.usage, modelId);
}

function turnOf(content: string, calls: readonly ToolCallPart[], usage: Usage, model: string): ModelTurn {
  const toolCalls = calls.map((c, index): ToolCall => ({
    id: c.toolCallId || `call_${index}`,
    name: c.toolName,
    arguments: toolArguments(c.input),
  }));
  return {
    content,
    toolCalls,
    usage: { inputTokens: tokenCount(usage.inputTokens.total), outputTokens: tokenCount(usage.outputTokens.total) },
    model,
  };
}

/**
 * The conversation in the SDK's provider-neutral prompt. System messages are joined into the one
 * system prompt at the start (Anthropic, Gemini and Bedrock take no other); empty user and
 * assistant texts are left out (Anthropic refuses empty text blocks).
 */
export function sdkPrompt(conversation: readonly ChatMessage[]): Prompt {
  const system: string[] = [];
  const prompt: Prompt = [];
  for (const message of conversation) {
    switch (message.role) {
      case 'system':
        system.push(message.content);
        break;
      case 'user':
        if (message.content !== '') prompt.push({ role: 'user', content: [{ type: 'text', text: message.content }] });
        break;
      case 'assistant': {
        const calls = message.toolCalls ?? [];
        if (message.content === '' && calls.length === 0) break;
        prompt.push({
          role: 'assistant',
          content: [
            ...(message.content === '' ? [] : [{ type: 'text' as const, text: message.content }]),
            ...calls.map((c) => ({
              type: 'tool-call' as const,
              toolCallId: c.id,
              toolName: c.name,
              input: c.arguments,
            })),
          ],
        });
        break;
      }
      case 'tool':
        prompt.push({
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: message.toolCallId,
              toolName: message.name,
              output: { type: 'text', value: message.content },
            },
          ],
        });
        break;
    }
  }
  return system.length > 0 ? [{ role: 'system', content: system.join('\n\n') }, ...prompt] : prompt;
}

/** The offered tools as function definitions, with their JSON Schemas as given. */
export function sdkTools(tools: readonly ToolSpec[]): FunctionTool[] {
  return tools.map((t) => ({ type: 'function', name: t.name, description: t.description, inputSchema: t.parameters }));
}
