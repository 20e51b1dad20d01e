import type { ChatMessage, ModelTurn, ToolCall } from '#libs/contracts';
import { isRecord, tokenCount, toolArguments } from './json.js';
import { ModelError } from './model-error.js';
import type { ModelRequest } from './model-request.js';
import { baseUrlOf, eventJson, invalidResponse, isEventStream, postToProvider, providerMessage, readEvents, readJson, type ProviderCall } from './provider-http.js';

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/** Calls a Chat Completions endpoint (OpenAI or any compatible server), streaming when `onToken` is given. */
export async function callOpenAi(req: ModelRequest): Promise<ModelTurn> {
  const stream = req.onToken !== undefined;
  const baseUrl = baseUrlOf('openai', req.baseUrl, DEFAULT_BASE_URL);
  const call: ProviderCall = {
    provider: 'openai',
    url: `${baseUrl}/chat/completions`,
    // Local compatible servers (Ollama, llama.cpp) need no key.
    headers: req.apiKey ? { authorization: `Bearer ${req.apiKey}` } : {},
    body: openAiRequestBody(req, { stream, officialApi: new URL(baseUrl).hostname === 'api.openai.com' }),
    apiKey: req.apiKey,
    signal: req.signal,
  };
  const res = await postToProvider(call);
  if (!req.onToken || !isEventStream(res)) {
    const turn = parseOpenAiCompletion(await readJson(res, call), req.model, req.apiKey);
    if (req.onToken && turn.content) req.onToken(turn.content);
    return turn;
  }
  const accumulator = new OpenAiStreamAccumulator(req.model, req.apiKey);
  for await (const event of readEvents(res, call)) {
    if (event.data === '[DONE]') {
      accumulator.done();
      break;
    }
    const text = accumulator.push(eventJson('openai', event.data));
    if (text) req.onToken(text);
  }
  return accumulator.finish();
}

/**
 * The request body. `max_completion_tokens` is what api.openai.com wants (its reasoning models
 * refuse `max_tokens`); compatible servers mostly know only `max_tokens`.
 */
export function openAiRequestBody(
  req: Pick<ModelRequest, 'model' | 'messages' | 'tools' | 'maxOutputTokens'>,
  options: { stream: boolean; officialApi: boolean },
): Record<string, unknown> {
  const body: Record<string, unknown> = { model: req.model, messages: req.messages.map(openAiMessage) };
  if (req.tools.length > 0) {
    body['tools'] = req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
  }
  if (req.maxOutputTokens !== undefined) body[options.officialApi ? 'max_completion_tokens' : 'max_tokens'] = req.maxOutputTokens;
  if (options.stream) {
    body['stream'] = true;
    body['stream_options'] = { include_usage: true };
  }
  return body;
}

function openAiMessage(message: ChatMessage): Record<string, unknown> {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'assistant': {
      const calls = message.toolCalls ?? [];
      if (calls.length === 0) return { role: 'assistant', content: message.content };
      return {
        role: 'assistant',
        // The API wants null rather than "" next to tool calls.
        content: message.content === '' ? null : message.content,
        tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } })),
      };
    }
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

/** Reads a non-streamed completion. */
export function parseOpenAiCompletion(body: unknown, requestedModel: string, apiKey: string | null = null): ModelTurn {
  if (!isRecord(body)) throw invalidResponse('openai', 'the body is not an object');
  if (body['error'] !== undefined) throw streamedError(body['error'], apiKey);
  const choices = body['choices'];
  const choice: unknown = Array.isArray(choices) ? choices[0] : undefined;
  if (!isRecord(choice) || !isRecord(choice['message'])) throw invalidResponse('openai', 'no choices[0].message');
  const message = choice['message'];
  const content = textOf(message['content']) ?? textOf(message['refusal']) ?? '';
  const rawCalls = message['tool_calls'] ?? [];
  if (!Array.isArray(rawCalls)) throw invalidResponse('openai', 'tool_calls is not an array');
  const toolCalls = rawCalls.map((raw: unknown, index): ToolCall => {
    const fn = isRecord(raw) ? raw['function'] : undefined;
    if (!isRecord(raw) || !isRecord(fn) || typeof fn['name'] !== 'string' || fn['name'] === '') {
      throw invalidResponse('openai', 'a tool call has no function name');
    }
    return { id: typeof raw['id'] === 'string' && raw['id'] ? raw['id'] : `call_${index}`, name: fn['name'], arguments: toolArguments(fn['arguments']) };
  });
  const usage = isRecord(body['usage']) ? body['usage'] : {};
  return {
    content,
    toolCalls,
    usage: { inputTokens: tokenCount(usage['prompt_tokens']), outputTokens: tokenCount(usage['completion_tokens']) },
    model: typeof body['model'] === 'string' && body['model'] ? body['model'] : requestedModel,
  };
}

// Content is a string, null next to tool calls, or (some compatible servers) an array of parts.
function textOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    return value.map((part: unknown) => (isRecord(part) && typeof part['text'] === 'string' ? part['text'] : '')).join('');
  }
  return undefined;
}

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
}

/** Folds `chat.completion.chunk` objects into one turn: text deltas in order, tool calls by index. */
export class OpenAiStreamAccumulator {
  private content = '';
  private readonly calls = new Map<number, PartialCall>();
  private lastIndex = 0;
  private model: string;
  private inputTokens = 0;
  private outputTokens = 0;
  private finished = false;

  constructor(
    requestedModel: string,
    private readonly apiKey: string | null = null,
  ) {
    this.model = requestedModel;
  }

  /** Takes one chunk; returns its text delta ('' when it has none). */
  push(chunk: unknown): string {
    if (!isRecord(chunk)) throw invalidResponse('openai', 'a stream chunk is not an object');
    if (chunk['error'] !== undefined) throw streamedError(chunk['error'], this.apiKey);
    if (typeof chunk['model'] === 'string' && chunk['model']) this.model = chunk['model'];
    const usage = chunk['usage'];
    if (isRecord(usage)) {
      this.inputTokens = tokenCount(usage['prompt_tokens']);
      this.outputTokens = tokenCount(usage['completion_tokens']);
    }
    const choices = chunk['choices'];
    if (!Array.isArray(choices)) return '';
    let text = '';
    for (const choice of choices as unknown[]) {
      if (!isRecord(choice) || (typeof choice['index'] === 'number' && choice['index'] !== 0)) continue;
      if (typeof choice['finish_reason'] === 'string') this.finished = true;
      const delta = choice['delta'];
      if (!isRecord(delta)) continue;
      const piece = textOf(delta['content']) ?? textOf(delta['refusal']) ?? '';
      this.content += piece;
      text += piece;
      if (Array.isArray(delta['tool_calls'])) for (const call of delta['tool_calls'] as unknown[]) this.addCallDelta(call);
    }
    return text;
  }

  /** Marks the `[DONE]` sentinel. */
  done(): void {
    this.finished = true;
  }

  /** The turn; a stream cut before its end is a dropped connection, worth a retry. */
  finish(): ModelTurn {
    if (!this.finished) throw new ModelError('openai stream ended before the reply was complete', { kind: 'unavailable' });
    const toolCalls = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]): ToolCall => {
        if (!call.name) throw invalidResponse('openai', 'a streamed tool call has no function name');
        return { id: call.id || `call_${index}`, name: call.name, arguments: toolArguments(call.arguments) };
      });
    return { content: this.content, toolCalls, usage: { inputTokens: this.inputTokens, outputTokens: this.outputTokens }, model: this.model };
  }

  private addCallDelta(raw: unknown): void {
    if (!isRecord(raw)) return;
    const id = typeof raw['id'] === 'string' ? raw['id'] : '';
    // Some compatible servers omit `index`: a new id starts a new call, no id continues the last.
    let index = typeof raw['index'] === 'number' ? raw['index'] : this.lastIndex;
    if (typeof raw['index'] !== 'number' && id) {
      const known = [...this.calls.entries()].find(([, c]) => c.id === id);
      index = known ? known[0] : this.calls.size;
    }
    this.lastIndex = index;
    const call = this.calls.get(index) ?? { id: '', name: '', arguments: '' };
    this.calls.set(index, call);
    if (id) call.id = id;
    const fn = raw['function'];
    if (!isRecord(fn)) return;
    // The name arrives whole in the first delta of a call; only the arguments are split.
    if (typeof fn['name'] === 'string' && !call.name) call.name = fn['name'];
    if (typeof fn['arguments'] === 'string') call.arguments += fn['arguments'];
  }
}

// An error object in a 200 body or mid-stream: the server failed after it had accepted the request.
function streamedError(error: unknown, apiKey: string | null): ModelError {
  const detail = providerMessage(JSON.stringify({ error }), apiKey);
  return new ModelError(`openai failed while answering${detail ? `: ${detail}` : ''}`, { kind: 'unavailable' });
}
