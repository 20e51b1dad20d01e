import type { ChatMessage, ToolSpec } from '#libs/contracts';
import { OpenAiStreamAccumulator, openAiRequestBody, parseOpenAiCompletion } from './openai.provider.js';
import { SseParser } from './sse.parser.js';

const tools: ToolSpec[] = [{ name: 'run_javascript', description: 'Runs JavaScript', parameters: { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] } }];
const conversation: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'What is 1+1?' },
  { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'run_javascript', arguments: { code: '1+1' } }] },
  { role: 'tool', toolCallId: 'call_1', name: 'run_javascript', content: '2' },
  { role: 'assistant', content: 'It is 2.' },
];

describe('openAiRequestBody', () => {
  it('maps every message role and the tools to Chat Completions', () => {
    expect(openAiRequestBody({ model: 'gpt-4o-mini', messages: conversation, tools }, { stream: false, officialApi: true })).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'What is 1+1?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'run_javascript', arguments: '{"code":"1+1"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '2' },
        { role: 'assistant', content: 'It is 2.' },
      ],
      tools: [{ type: 'function', function: { name: 'run_javascript', description: 'Runs JavaScript', parameters: tools[0]!.parameters } }],
    });
  });

  it('asks for a stream with usage, omits empty tools, and names the token limit per server', () => {
    const req = { model: 'm', messages: [{ role: 'user', content: 'hi' }] as ChatMessage[], tools: [], maxOutputTokens: 50 };
    expect(openAiRequestBody(req, { stream: true, officialApi: true })).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      max_completion_tokens: 50,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(openAiRequestBody(req, { stream: false, officialApi: false })).toEqual({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 });
  });
});

describe('parseOpenAiCompletion', () => {
  it('reads content, tool calls with parsed arguments, usage and model', () => {
    const turn = parseOpenAiCompletion(
      {
        model: 'gpt-4o-mini-2024-07-18',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: 'call_a', type: 'function', function: { name: 'run_javascript', arguments: '{"code":"1+1"}' } },
                { id: 'call_b', type: 'function', function: { name: 'run_javascript', arguments: '{"code": broken' } },
              ],
            },
            finish_reason: 'tool_calls',
          },
        ],
        usage: { prompt_tokens: 12, completion_tokens: 7 },
      },
      'gpt-4o-mini',
    );
    expect(turn).toEqual({
      content: '',
      toolCalls: [
        { id: 'call_a', name: 'run_javascript', arguments: { code: '1+1' } },
        { id: 'call_b', name: 'run_javascript', arguments: {} },
      ],
      usage: { inputTokens: 12, outputTokens: 7 },
      model: 'gpt-4o-mini-2024-07-18',
    });
  });

  it('falls back to the requested model and zero usage when a compatible server leaves them out', () => {
    expect(parseOpenAiCompletion({ choices: [{ message: { content: 'hi' } }] }, 'llama3')).toEqual({
      content: 'hi',
      toolCalls: [],
      usage: { inputTokens: 0, outputTokens: 0 },
      model: 'llama3',
    });
  });

  it.each([
    ['not an object', 'oops'],
    ['no choices', { choices: [] }],
    ['a tool call without name', { choices: [{ message: { content: null, tool_calls: [{ id: 'x', function: { arguments: '{}' } }] } }] }],
  ])('refuses a malformed response (%s) as invalid_response', (_what, body) => {
    expect(() => parseOpenAiCompletion(body, 'm')).toThrow(expect.objectContaining({ kind: 'invalid_response', retryable: false }));
  });
});

// Captured from api.openai.com (ids shortened): text, then two parallel tool calls, then usage.
const capturedStream = [
  'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}',
  'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":"Let me "},"finish_reason":null}]}',
  'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":"check."},"finish_reason":null}]}',
  'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}',
  'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\": \\"Par"}}]},"finish_reason":null}]}',
  'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_y","type":"function","function":{"name":"get_time","arguments":""}}]},"finish_reason":null}]}',
  'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"is\\"}"}}]},"finish_reason":null}]}',
  'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\\"tz\\":\\"CET\\"}"}}]},"finish_reason":null}]}',
  'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}',
  'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":80,"completion_tokens":31,"total_tokens":111}}',
  'data: [DONE]',
]
  .map((line) => `${line}\n\n`)
  .join('');

function replay(stream: string, chunkSize: number): { tokens: string[]; accumulator: OpenAiStreamAccumulator } {
  const parser = new SseParser();
  const accumulator = new OpenAiStreamAccumulator('gpt-4o-mini');
  const tokens: string[] = [];
  for (let i = 0; i < stream.length; i += chunkSize) {
    for (const event of parser.push(stream.slice(i, i + chunkSize))) {
      if (event.data === '[DONE]') accumulator.done();
      else {
        const text = accumulator.push(JSON.parse(event.data));
        if (text) tokens.push(text);
      }
    }
  }
  return { tokens, accumulator };
}

describe('OpenAiStreamAccumulator', () => {
  it('accumulates text deltas and interleaved tool-call deltas by index from a captured stream', () => {
    const { tokens, accumulator } = replay(capturedStream, 17);
    expect(tokens).toEqual(['Let me ', 'check.']);
    expect(accumulator.finish()).toEqual({
      content: 'Let me check.',
      toolCalls: [
        { id: 'call_x', name: 'get_weather', arguments: { city: 'Paris' } },
        { id: 'call_y', name: 'get_time', arguments: { tz: 'CET' } },
      ],
      usage: { inputTokens: 80, outputTokens: 31 },
      model: 'gpt-4o-mini-2024-07-18',
    });
  });

  it('treats a stream cut before finish_reason and [DONE] as a retryable dropped connection', () => {
    const cut = capturedStream.slice(0, capturedStream.indexOf('"finish_reason":"tool_calls"') - 200);
    const { accumulator } = replay(cut, 64);
    expect(() => accumulator.finish()).toThrow(expect.objectContaining({ kind: 'unavailable', retryable: true }));
  });

  it('turns an error object in the stream into an unavailable error without the key', () => {
    const accumulator = new OpenAiStreamAccumulator('m', 'sk-abcdefghijklmnopqrstuvwxyz');
    expect(() => accumulator.push({ error: { message: 'server overloaded for sk-abcdefghijklmnopqrstuvwxyz' } })).toThrow(
      expect.objectContaining({ kind: 'unavailable', message: 'openai failed while answering: server overloaded for [redacted]' }),
    );
  });
});
