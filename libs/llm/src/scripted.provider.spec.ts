import type { ChatMessage, ToolSpec } from '#libs/contracts';
import { argumentsFromSchema, jsonObjectAt, scriptedTurn, tokensOf } from './scripted.provider.js';

const runJs: ToolSpec = {
  name: 'run_javascript',
  description: 'Runs JavaScript',
  parameters: { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] },
};
const search: ToolSpec = {
  name: 'web_search',
  description: 'Searches',
  parameters: {
    type: 'object',
    properties: {
      query: { type: 'string' },
      limit: { type: 'integer' },
      safe: { type: 'boolean' },
      lang: { type: 'string' },
    },
    required: ['query', 'limit', 'safe'],
  },
};
const user = (content: string): ChatMessage => ({ role: 'user', content });

describe('scriptedTurn', () => {
  it('echoes the user when no offered tool is named (rule 3)', () => {
    expect(
      scriptedTurn({
        model: 'scripted-1',
        messages: [{ role: 'system', content: 'sys' }, user('hello there')],
        tools: [runJs],
      }),
    ).toEqual({
      content: 'You said: "hello there"',
      toolCalls: [],
      usage: { inputTokens: 3, outputTokens: 4 },
      model: 'scripted-1',
    });
  });

  it('calls named tools with the JSON object written after the name, in the order named (rule 2)', () => {
    const turn = scriptedTurn({
      model: 'm',
      messages: [user('web_search {"query":"x","limit":3} then run_javascript {"code":"1+1"}')],
      tools: [runJs, search],
    });
    expect(turn.content).toBe('');
    expect(turn.toolCalls).toEqual([
      { id: 'call_1', name: 'web_search', arguments: { query: 'x', limit: 3 } },
      { id: 'call_2', name: 'run_javascript', arguments: { code: '1+1' } },
    ]);
    expect(turn.usage.outputTokens).toBe(4); // each call counts the words of `name {json}`
  });

  it("builds arguments from the schema when none are written: required strings get the user's message", () => {
    const text = 'please use web_search now';
    expect(scriptedTurn({ model: 'm', messages: [user(text)], tools: [search] }).toolCalls).toEqual([
      { id: 'call_1', name: 'web_search', arguments: { query: text, limit: 0, safe: false } },
    ]);
  });

  it('matches whole words only', () => {
    expect(
      scriptedTurn({ model: 'm', messages: [user('my_run_javascript_x and run_javascripts')], tools: [runJs] })
        .toolCalls,
    ).toEqual([]);
  });

  it('summarises the latest tool results after one round (rule 1)', () => {
    const messages: ChatMessage[] = [
      user('run_javascript {"code":"1+1"} and web_search'),
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'call_1', name: 'run_javascript', arguments: { code: '1+1' } },
          { id: 'call_2', name: 'web_search', arguments: {} },
        ],
      },
      { role: 'tool', toolCallId: 'call_1', name: 'run_javascript', content: '2' },
      { role: 'tool', toolCallId: 'call_2', name: 'web_search', content: 'no results' },
    ];
    expect(scriptedTurn({ model: 'm', messages, tools: [runJs, search] })).toMatchObject({
      content: 'Tool results: run_javascript: 2; web_search: no results',
      toolCalls: [],
    });
  });

  it('calls the tools again while fewer than `rounds:N` rounds ran, with ids unique across rounds', () => {
    const ask = user('run_javascript {"code":"1"} rounds:2');
    const round1 = scriptedTurn({ model: 'm', messages: [ask], tools: [runJs] });
    expect(round1.toolCalls).toEqual([{ id: 'call_1', name: 'run_javascript', arguments: { code: '1' } }]);
    const after1: ChatMessage[] = [
      ask,
      { role: 'assistant', content: '', toolCalls: round1.toolCalls },
      { role: 'tool', toolCallId: 'call_1', name: 'run_javascript', content: '1' },
    ];
    const round2 = scriptedTurn({ model: 'm', messages: after1, tools: [runJs] });
    expect(round2.toolCalls).toEqual([{ id: 'call_2', name: 'run_javascript', arguments: { code: '1' } }]);
    const after2: ChatMessage[] = [
      ...after1,
      { role: 'assistant', content: '', toolCalls: round2.toolCalls },
      { role: 'tool', toolCallId: 'call_2', name: 'run_javascript', content: '1' },
    ];
    expect(scriptedTurn({ model: 'm', messages: after2, tools: [runJs] })).toMatchObject({
      content: 'Tool results: run_javascript: 1',
      toolCalls: [],
    });
  });

  it('is deterministic and falls back to a greeting and the model name "scripted"', () => {
    const input = { model: '', messages: [] as ChatMessage[], tools: [] };
    expect(scriptedTurn(input)).toEqual(scriptedTurn(input));
    expect(scriptedTurn(input)).toMatchObject({ content: 'Hello from the scripted model.', model: 'scripted' });
  });
});

describe('tokensOf', () => {
  it.each(['You said: "a  b"', '  leading and trailing  ', 'one', '', 'line\nbreak\tand tab'])(
    'splits %j into words that concatenate to it',
    (text) => {
      const tokens = tokensOf(text);
      expect(tokens.join('')).toBe(text);
      expect(tokens.length).toBe(text.trim() === '' ? (text === '' ? 0 : 1) : text.trim().split(/\s+/).length);
    },
  );
});

describe('jsonObjectAt and argumentsFromSchema', () => {
  it('reads a balanced object with braces inside strings, and nothing else', () => {
    expect(jsonObjectAt('x {"code":"if (a) { b(\\"}\\") }"} tail', 1)).toEqual({ code: 'if (a) { b("}") }' });
    expect(jsonObjectAt('x [1,2]', 1)).toBeUndefined();
    expect(jsonObjectAt('x {not json}', 1)).toBeUndefined();
  });

  it('prefers default, const and enum, and fills nested required objects', () => {
    expect(
      argumentsFromSchema(
        {
          type: 'object',
          properties: {
            mode: { type: 'string', enum: ['fast', 'slow'] },
            n: { type: 'number', default: 5 },
            k: { const: 'x' },
            min: { type: 'integer', minimum: 3 },
            opts: { type: 'object', properties: { deep: { type: ['null', 'boolean'] } }, required: ['deep'] },
            list: { type: 'array' },
          },
          required: ['mode', 'n', 'k', 'min', 'opts', 'list'],
        },
        'msg',
      ),
    ).toEqual({ mode: 'fast', n: 5, k: 'x', min: 3, opts: { deep: false }, list: [] });
  });
});
