import type { ChatMessage, ToolSpec } from '#libs/contracts';
import { AnthropicStreamAccumulator, anthropicRequestBody, parseAnthropicMessage } from './anthropic.provider.js';
import { SseParser } from './sse.parser.js';

const tools: ToolSpec[] = [{ name: 'fetch_url', description: 'Fetches a URL', parameters: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] } }];

describe('anthropicRequestBody', () => {
  it('moves system prompts to `system`, maps tool calls and puts consecutive tool results in one user message', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Compare two pages' },
      {
        role: 'assistant',
        content: 'Fetching both.',
        toolCalls: [
          { id: 'toolu_1', name: 'fetch_url', arguments: { url: 'https://a.example' } },
          { id: 'toolu_2', name: 'fetch_url', arguments: { url: 'https://b.example' } },
        ],
      },
      { role: 'tool', toolCallId: 'toolu_1', name: 'fetch_url', content: 'page A' },
      { role: 'tool', toolCallId: 'toolu_2', name: 'fetch_url', content: 'page B' },
      { role: 'assistant', content: 'A is longer.' },
      { role: 'user', content: 'Thanks' },
    ];
    expect(anthropicRequestBody({ model: 'claude-sonnet-4-5', messages, tools }, false)).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      system: 'Be brief.',
      messages: [
        { role: 'user', content: 'Compare two pages' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Fetching both.' },
            { type: 'tool_use', id: 'toolu_1', name: 'fetch_url', input: { url: 'https://a.example' } },
            { type: 'tool_use', id: 'toolu_2', name: 'fetch_url', input: { url: 'https://b.example' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'page A' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: 'page B' },
          ],
        },
        { role: 'assistant', content: 'A is longer.' },
        { role: 'user', content: 'Thanks' },
      ],
      tools: [{ name: 'fetch_url', description: 'Fetches a URL', input_schema: tools[0]!.parameters }],
    });
  });

  it('drops empty assistant text next to tool calls, honours maxOutputTokens and asks for a stream', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: '', toolCalls: [{ id: 't1', name: 'fetch_url', arguments: {} }] },
    ];
    expect(anthropicRequestBody({ model: 'm', messages, tools: [], maxOutputTokens: 99 }, true)).toEqual({
      model: 'm',
      max_tokens: 99,
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'fetch_url', input: {} }] },
      ],
      stream: true,
    });
  });
});

describe('parseAnthropicMessage', () => {
  it('joins text blocks, reads tool_use blocks and counts cached input tokens', () => {
    expect(
      parseAnthropicMessage(
        {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5-20250929',
          content: [
            { type: 'thinking', thinking: '...', signature: 's' },
            { type: 'text', text: 'Fetching ' },
            { type: 'text', text: 'now.' },
            { type: 'tool_use', id: 'toolu_9', name: 'fetch_url', input: { url: 'https://a.example' } },
          ],
          stop_reason: 'tool_use',
          usage: { input_tokens: 10, cache_read_input_tokens: 5, output_tokens: 20 },
        },
        'claude',
      ),
    ).toEqual({
      content: 'Fetching now.',
      toolCalls: [{ id: 'toolu_9', name: 'fetch_url', arguments: { url: 'https://a.example' } }],
      usage: { inputTokens: 15, outputTokens: 20 },
      model: 'claude-sonnet-4-5-20250929',
    });
  });

  it('refuses a body without content blocks as invalid_response', () => {
    expect(() => parseAnthropicMessage({ type: 'message' }, 'm')).toThrow(expect.objectContaining({ kind: 'invalid_response', retryable: false }));
  });
});

// Captured from api.anthropic.com (ids shortened): a text block, then a tool_use with split JSON.
const capturedStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Okay, let me "}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"check."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"location\\": \\"San Fra"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ncisco, CA\\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

`;

function replay(stream: string, chunkSize: number): { tokens: string[]; accumulator: AnthropicStreamAccumulator } {
  const parser = new SseParser();
  const accumulator = new AnthropicStreamAccumulator('claude');
  const tokens: string[] = [];
  for (let i = 0; i < stream.length; i += chunkSize) {
    for (const event of parser.push(stream.slice(i, i + chunkSize))) {
      const text = accumulator.push(JSON.parse(event.data));
      if (text) tokens.push(text);
    }
  }
  return { tokens, accumulator };
}

describe('AnthropicStreamAccumulator', () => {
  it('accumulates text_delta and input_json_delta events from a captured stream', () => {
    const { tokens, accumulator } = replay(capturedStream, 23);
    expect(tokens).toEqual(['Okay, let me ', 'check.']);
    expect(accumulator.stopped).toBe(true);
    expect(accumulator.finish()).toEqual({
      content: 'Okay, let me check.',
      toolCalls: [{ id: 'toolu_01', name: 'get_weather', arguments: { location: 'San Francisco, CA' } }],
      usage: { inputTokens: 472, outputTokens: 89 },
      model: 'claude-sonnet-4-5-20250929',
    });
  });

  it('treats a stream cut before message_stop as a retryable dropped connection', () => {
    const { accumulator } = replay(capturedStream.slice(0, capturedStream.indexOf('event: message_delta')), 50);
    expect(() => accumulator.finish()).toThrow(expect.objectContaining({ kind: 'unavailable', retryable: true }));
  });

  it('maps an overloaded error event to unavailable and an invalid request to rejected', () => {
    const accumulator = new AnthropicStreamAccumulator('claude');
    expect(() => accumulator.push({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })).toThrow(
      expect.objectContaining({ kind: 'unavailable', retryable: true, message: 'anthropic failed while answering: Overloaded' }),
    );
    expect(() => accumulator.push({ type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long' } })).toThrow(
      expect.objectContaining({ kind: 'rejected', retryable: false }),
    );
  });
});
