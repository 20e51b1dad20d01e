import type { ChatMessage, ModelTurn, ToolCall } from '#libs/contracts';
import { isRecord, tokenCount, toolArguments } from './json.js';
import { ModelError } from './model-error.js';
import type { ModelRequest } from './model-request.js';
import { baseUrlOf, eventJson, invalidResponse, isEventStream, postToProvider, providerMessage, readEvents, readJson, type ProviderCall } from './provider-http.js';

const DEFAULT_BASE_URL = 'https://api.anthropic.com';
const API_VERSION = '2023-06-01';
/** The Messages API requires `max_tokens`; this is the default when the request sets none. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 1024;

/** Calls the Anthropic Messages API, streaming when `onToken` is given. */
export async function callAnthropic(req: ModelRequest): Promise<ModelTurn> {
  const stream = req.onToken !== undefined;
  const call: ProviderCall = {
    provider: 'anthropic',
    url: `${baseUrlOf('anthropic', req.baseUrl, DEFAULT_BASE_URL)}/v1/messages`,
    headers: { 'anthropic-version': API_VERSION, ...(req.apiKey ? { 'x-api-key': req.apiKey } : {}) },
    body: anthropicRequestBody(req, stream),
    apiKey: req.apiKey,
    signal: req.signal,
  };
  const res = await postToProvider(call);
  if (!req.onToken || !isEventStream(res)) {
    const turn = parseAnthropicMessage(await readJson(res, call), req.model, req.apiKey);
    if (req.onToken && turn.content) req.onToken(turn.content);
    return turn;
  }
  const accumulator = new AnthropicStreamAccumulator(req.model, req.apiKey);
  for await (const event of readEvents(res, call)) {
    const text = accumulator.push(eventJson('anthropic', event.data));
    if (text) req.onToken(text);
    if (accumulator.stopped) break;
  }
  return accumulator.finish();
}

type Block =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content: string };

interface Turn {
  role: 'user' | 'assistant';
  blocks: Block[];
}

/**
 * The request body. System messages go to `system`; tool results become `tool_result` blocks of a
 * user turn, and consecutive turns of one role are merged, so several results of one round share a
 * user message as the API requires. Empty text blocks are dropped (the API refuses them).
 */
export function anthropicRequestBody(req: Pick<ModelRequest, 'model' | 'messages' | 'tools' | 'maxOutputTokens'>, stream: boolean): Record<string, unknown> {
  const system: string[] = [];
  const turns: Turn[] = [];
  for (const message of req.messages) {
    if (message.role === 'system') {
      system.push(message.content);
      continue;
    }
    const turn = turnOf(message);
    const previous = turns.at(-1);
    if (previous && previous.role === turn.role) previous.blocks.push(...turn.blocks);
    else turns.push(turn);
  }
  const body: Record<string, unknown> = {
    model: req.model,
    max_tokens: req.maxOutputTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
    messages: turns
      .filter((t) => t.blocks.length > 0)
      .map((t) => {
        const only = t.blocks[0];
        // A single text block is sent as a plain string, the API's simplest (and most portable) form.
        return { role: t.role, content: t.blocks.length === 1 && only?.type === 'text' ? only.text : t.blocks };
      }),
  };
  if (system.length > 0) body['system'] = system.join('\n\n');
  if (req.tools.length > 0) body['tools'] = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
  if (stream) body['stream'] = true;
  return body;
}

function turnOf(message: Exclude<ChatMessage, { role: 'system' }>): Turn {
  switch (message.role) {
    case 'user':
      return { role: 'user', blocks: message.content === '' ? [] : [{ type: 'text', text: message.content }] };
    case 'assistant': {
      const blocks: Block[] = message.content === '' ? [] : [{ type: 'text', text: message.content }];
      for (const c of message.toolCalls ?? []) blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments });
      return { role: 'assistant', blocks };
    }
    case 'tool':
      return { role: 'user', blocks: [{ type: 'tool_result', tool_use_id: message.toolCallId, content: message.content }] };
  }
}

/** Reads a non-streamed message: text blocks joined, `tool_use` blocks as tool calls. */
export function parseAnthropicMessage(body: unknown, requestedModel: string, apiKey: string | null = null): ModelTurn {
  if (!isRecord(body)) throw invalidResponse('anthropic', 'the body is not an object');
  if (body['type'] === 'error') throw streamedError(body['error'], apiKey);
  const blocks = body['content'];
  if (!Array.isArray(blocks)) throw invalidResponse('anthropic', 'content is not an array');
  let content = '';
  const toolCalls: ToolCall[] = [];
  for (const block of blocks as unknown[]) {
    if (!isRecord(block)) throw invalidResponse('anthropic', 'a content block is not an object');
    if (block['type'] === 'text' && typeof block['text'] === 'string') content += block['text'];
    else if (block['type'] === 'tool_use') {
      if (typeof block['id'] !== 'string' || typeof block['name'] !== 'string' || !block['name']) {
        throw invalidResponse('anthropic', 'a tool_use block has no id or name');
      }
      toolCalls.push({ id: block['id'], name: block['name'], arguments: toolArguments(block['input']) });
    }
    // Other blocks (thinking, redacted_thinking, server tools) carry nothing the agent loop uses.
  }
  return {
    content,
    toolCalls,
    usage: usageOf(body['usage'], { inputTokens: 0, outputTokens: 0 }),
    model: typeof body['model'] === 'string' && body['model'] ? body['model'] : requestedModel,
  };
}

// Cached prompt tokens are input too: counting only `input_tokens` would under-report them.
function usageOf(raw: unknown, previous: { inputTokens: number; outputTokens: number }): { inputTokens: number; outputTokens: number } {
  if (!isRecord(raw)) return previous;
  const hasInput = ['input_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'].some((k) => typeof raw[k] === 'number');
  return {
    inputTokens: hasInput
      ? tokenCount(raw['input_tokens']) + tokenCount(raw['cache_creation_input_tokens']) + tokenCount(raw['cache_read_input_tokens'])
      : previous.inputTokens,
    outputTokens: typeof raw['output_tokens'] === 'number' ? tokenCount(raw['output_tokens']) : previous.outputTokens,
  };
}

type StreamBlock = { type: 'text' } | { type: 'tool_use'; id: string; name: string; json: string; input: unknown } | { type: 'other' };

/** Folds Messages API stream events into one turn. */
export class AnthropicStreamAccumulator {
  private readonly blocks = new Map<number, StreamBlock>();
  private content = '';
  private model: string;
  private usage = { inputTokens: 0, outputTokens: 0 };
  private started = false;
  /** True once `message_stop` arrived. */
  stopped = false;

  constructor(
    requestedModel: string,
    private readonly apiKey: string | null = null,
  ) {
    this.model = requestedModel;
  }

  /** Takes one event's payload (its `type` names the event); returns its text delta ('' when none). */
  push(event: unknown): string {
    if (!isRecord(event)) throw invalidResponse('anthropic', 'a stream event is not an object');
    switch (event['type']) {
      case 'message_start': {
        const message = event['message'];
        if (!isRecord(message)) throw invalidResponse('anthropic', 'message_start has no message');
        this.started = true;
        if (typeof message['model'] === 'string' && message['model']) this.model = message['model'];
        this.usage = usageOf(message['usage'], this.usage);
        return '';
      }
      case 'content_block_start':
        return this.startBlock(event);
      case 'content_block_delta':
        return this.delta(event);
      case 'message_delta':
        this.usage = usageOf(event['usage'], this.usage);
        return '';
      case 'message_stop':
        this.stopped = true;
        return '';
      case 'error':
        throw streamedError(event['error'], this.apiKey);
      default:
        // ping, content_block_stop and event types added later carry nothing to accumulate.
        return '';
    }
  }

  /** The turn; a stream cut before `message_stop` is a dropped connection, worth a retry. */
  finish(): ModelTurn {
    if (!this.started || !this.stopped) throw new ModelError('anthropic stream ended before the reply was complete', { kind: 'unavailable' });
    const toolCalls: ToolCall[] = [];
    for (const [, block] of [...this.blocks.entries()].sort(([a], [b]) => a - b)) {
      if (block.type !== 'tool_use') continue;
      toolCalls.push({ id: block.id, name: block.name, arguments: block.json === '' ? toolArguments(block.input) : toolArguments(block.json) });
    }
    return { content: this.content, toolCalls, usage: this.usage, model: this.model };
  }

  private startBlock(event: Record<string, unknown>): string {
    const index = event['index'];
    const block = event['content_block'];
    if (typeof index !== 'number' || !isRecord(block)) throw invalidResponse('anthropic', 'content_block_start without index or block');
    if (block['type'] === 'text') {
      this.blocks.set(index, { type: 'text' });
      const text = typeof block['text'] === 'string' ? block['text'] : '';
      this.content += text;
      return text;
    }
    if (block['type'] === 'tool_use') {
      if (typeof block['id'] !== 'string' || typeof block['name'] !== 'string' || !block['name']) {
        throw invalidResponse('anthropic', 'a tool_use block has no id or name');
      }
      this.blocks.set(index, { type: 'tool_use', id: block['id'], name: block['name'], json: '', input: block['input'] });
      return '';
    }
    this.blocks.set(index, { type: 'other' });
    return '';
  }

  private delta(event: Record<string, unknown>): string {
    const block = typeof event['index'] === 'number' ? this.blocks.get(event['index']) : undefined;
    const delta = event['delta'];
    if (!block || !isRecord(delta)) throw invalidResponse('anthropic', 'content_block_delta for an unknown block');
    if (delta['type'] === 'text_delta' && block.type === 'text' && typeof delta['text'] === 'string') {
      this.content += delta['text'];
      return delta['text'];
    }
    if (delta['type'] === 'input_json_delta' && block.type === 'tool_use' && typeof delta['partial_json'] === 'string') {
      block.json += delta['partial_json'];
    }
    return '';
  }
}

// An error event mid-stream (usually `overloaded_error`): retryable unless it blames the request.
function streamedError(error: unknown, apiKey: string | null): ModelError {
  const detail = providerMessage(JSON.stringify({ error }), apiKey);
  const type = isRecord(error) ? error['type'] : undefined;
  const rejected = ['invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'request_too_large'].includes(String(type));
  return rejected
    ? new ModelError(`anthropic rejected the request${detail ? `: ${detail}` : ''}`, { kind: 'rejected' })
    : new ModelError(`anthropic failed while answering${detail ? `: ${detail}` : ''}`, { kind: 'unavailable' });
}
