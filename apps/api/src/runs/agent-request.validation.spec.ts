import { ServiceError } from '#libs/contracts';
import { textProblem } from '../json-off-thread.js';
import { LIMITS, parseAgentRequest, parseToolOutputs, resolveCapabilities } from './agent-request.validation.js';

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof ServiceError) return e.code;
    throw e;
  }
  return 'ok';
}

describe('parseAgentRequest', () => {
  it('accepts a minimal request and defaults the rest, ignoring unknown fields', () => {
    expect(parseAgentRequest({ message: 'hi', extra: 1 })).toEqual({
      message: 'hi',
      capabilities: undefined,
      files: [],
      stream: false,
      background: false,
      tools: [],
    });
  });

  it('checks the body, then message, capabilities, stream, files and tools', () => {
    expect(codeOf(() => parseAgentRequest(null))).toBe('invalid_body');
    expect(codeOf(() => parseAgentRequest('hi'))).toBe('invalid_body');
    expect(codeOf(() => parseAgentRequest({ message: ' ' }))).toBe('missing_message');
    expect(codeOf(() => parseAgentRequest({ message: '😀'.repeat(100_000) }))).toBe('ok');
    expect(codeOf(() => parseAgentRequest({ message: '😀'.repeat(100_001) }))).toBe('message_too_long');
    expect(codeOf(() => parseAgentRequest({ message: 'hi', capabilities: ['chat', 'chat'] }))).toBe('ok');
    expect(codeOf(() => parseAgentRequest({ message: 'hi', capabilities: [1] }))).toBe('invalid_capabilities');
    expect(codeOf(() => parseAgentRequest({ message: 'hi', stream: 1 }))).toBe('invalid_body');
    expect(codeOf(() => parseAgentRequest({ message: 'hi', files: [{ name: '', content: 'x' }] }))).toBe(
      'invalid_files',
    );
    expect(
      codeOf(() => parseAgentRequest({ message: 'hi', files: [{ name: 'a', content: 'é'.repeat(524_288) }] })),
    ).toBe('ok');
    expect(
      codeOf(() => parseAgentRequest({ message: 'hi', files: [{ name: 'a', content: `${'é'.repeat(524_288)}x` }] })),
    ).toBe('invalid_files');
    const tool = { name: 't', description: 'd', parameters: { type: 'object' } };
    expect(codeOf(() => parseAgentRequest({ message: 'hi', tools: [tool, tool] }))).toBe('invalid_tools');
    expect(codeOf(() => parseAgentRequest({ message: 'hi', tools: [{ ...tool, description: undefined }] }))).toBe(
      'invalid_tools',
    );
    expect(codeOf(() => parseAgentRequest({ message: 'hi', tools: [tool], stream: true }))).toBe(
      'stream_not_supported',
    );
    // 1024 characters are 1024 code points, as JSON Schema's maxLength counts them: an emoji is one.
    expect(
      codeOf(() => parseAgentRequest({ message: 'hi', tools: [{ ...tool, description: '\u{1F680}'.repeat(1024) }] })),
    ).toBe('ok');
    expect(
      codeOf(() => parseAgentRequest({ message: 'hi', tools: [{ ...tool, description: '\u{1F680}'.repeat(1025) }] })),
    ).toBe('invalid_tools');
  });

  it('takes `background` as a boolean, with tools too, but never with `stream`', () => {
    expect(parseAgentRequest({ message: 'hi', background: true }).background).toBe(true);
    const tool = { name: 't', description: 'd', parameters: { type: 'object' } };
    expect(codeOf(() => parseAgentRequest({ message: 'hi', background: true, tools: [tool] }))).toBe('ok');
    expect(codeOf(() => parseAgentRequest({ message: 'hi', background: 'yes' }))).toBe('invalid_body');
    expect(codeOf(() => parseAgentRequest({ message: 'hi', background: true, stream: true }))).toBe('invalid_body');
    expect(codeOf(() => parseAgentRequest({ message: 'hi', background: false, stream: true }))).toBe('ok');
  });
});

describe('textProblem', () => {
  it.each([
    ['plain text', 'hello', undefined],
    ['a surrogate pair', 'rocket \u{1F680}', undefined],
    ['CJK', '报告', undefined],
    ['other control characters', 'a\u0001\u001f\u007f', undefined],
    ['a NUL', 'a\u0000b', 'a NUL character (\\u0000)'],
    ['a lone high surrogate at the end', 'a\ud800', 'an unpaired UTF-16 surrogate'],
    ['a lone low surrogate at the start', '\udc00a', 'an unpaired UTF-16 surrogate'],
    ['a reversed pair', '\udc00\ud800', 'an unpaired UTF-16 surrogate'],
  ])('%s', (_, text, problem) => {
    expect(textProblem(text)).toBe(problem);
  });
});

describe('NUL and lone surrogates in a request', () => {
  const tool = { name: 't', description: 'd', parameters: { type: 'object' } };
  it.each([
    [{ message: 'a\u0000' }, 'invalid_body'],
    [{ message: '\ud800' }, 'invalid_body'],
    [{ message: 'hi', files: [{ name: 'a\u0000', content: 'x' }] }, 'invalid_files'],
    [{ message: 'hi', files: [{ name: 'a', content: '\udfff' }] }, 'invalid_files'],
    [{ message: 'hi', tools: [{ ...tool, description: '\u0000' }] }, 'invalid_tools'],
    [
      { message: 'hi', tools: [{ ...tool, parameters: { type: 'object', properties: { ['k\ud800']: {} } } }] },
      'invalid_tools',
    ],
    [{ message: 'hi', tools: [{ ...tool, parameters: { type: 'object', enum: [['\u0000']] } }] }, 'invalid_tools'],
  ])('%j is %s', (body, code) => {
    expect(codeOf(() => parseAgentRequest(body))).toBe(code);
  });

  it('in tool outputs, before the compute instance', () => {
    expect(
      codeOf(() =>
        parseToolOutputs({ tool_outputs: [{ tool_call_id: 'a', output: 'x\u0000' }], _compute_instance: 'c' }),
      ),
    ).toBe('invalid_tool_outputs');
    expect(
      codeOf(() =>
        parseToolOutputs({ tool_outputs: [{ tool_call_id: '\ud800', output: 'x' }], _compute_instance: 'c' }),
      ),
    ).toBe('invalid_tool_outputs');
  });
});

describe('customer tool schemas', () => {
  const withId = (id: string, extra: Record<string, unknown> = {}) => ({
    name: 't',
    description: 'd',
    parameters: { $id: id, type: 'object', ...extra },
  });

  it('may reuse an $id from request to request, and within one request', () => {
    for (let i = 0; i < 3; i++)
      expect(codeOf(() => parseAgentRequest({ message: 'hi', tools: [withId('urn:test:same')] }))).toBe('ok');
    expect(
      codeOf(() =>
        parseAgentRequest({
          message: 'hi',
          tools: [withId('urn:test:same'), { ...withId('urn:test:same'), name: 'u' }],
        }),
      ),
    ).toBe('ok');
  });

  it('are still checked: the meta-schema, unresolvable $refs and bad patterns are invalid_tools', () => {
    expect(codeOf(() => parseAgentRequest({ message: 'hi', tools: [withId('urn:test:a', { properties: 5 })] }))).toBe(
      'invalid_tools',
    );
    expect(
      codeOf(() =>
        parseAgentRequest({
          message: 'hi',
          tools: [withId('urn:test:a', { properties: { q: { $ref: '#/nowhere' } } })],
        }),
      ),
    ).toBe('invalid_tools');
    expect(
      codeOf(() =>
        parseAgentRequest({
          message: 'hi',
          tools: [withId('urn:test:a', { properties: { q: { type: 'string', pattern: '(' } } })],
        }),
      ),
    ).toBe('invalid_tools');
    expect(
      codeOf(() =>
        parseAgentRequest({ message: 'hi', tools: [withId('urn:test:a', { $schema: 'https://example.com/unknown' })] }),
      ),
    ).toBe('invalid_tools');
    expect(codeOf(() => parseAgentRequest({ message: 'hi', tools: [withId('urn:test:a', { $schema: 5 })] }))).toBe(
      'invalid_tools',
    );
  });
});

describe('customer tool schema limits (issue 28), checked before compiling', () => {
  const flat = (n: number) => ({
    type: 'object',
    properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: 'string' }])),
  });
  const nested = (levels: number) => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { next: schema } };
    return schema;
  };
  const messageOf = (parameters: unknown, count = 1): string => {
    try {
      parseAgentRequest({
        message: 'hi',
        tools: Array.from({ length: count }, (_, i) => ({ name: `t${i}`, description: 'd', parameters })),
      });
    } catch (e) {
      if (e instanceof ServiceError && e.code === 'invalid_tools') return e.message;
      throw e;
    }
    return 'ok';
  };

  it('refuses a 2.2 MB schema of 25,000 properties by its size, not by overflowing the stack', () => {
    expect(messageOf(flat(25_000))).toMatch(
      /^tools\[0\]\.parameters is \d+ bytes of JSON; the limit is 16 KB \(16384 bytes\)\.$/,
    );
  });

  it('refuses more schemas (JSON objects) in one tool than the limit, under the byte limit', () => {
    // The root, its `properties` and one object per property.
    expect(messageOf(flat(LIMITS.toolSchemaObjects - 2))).toBe('ok');
    expect(messageOf(flat(LIMITS.toolSchemaObjects - 1))).toBe(
      `tools[0].parameters has more than ${LIMITS.toolSchemaObjects} schemas (JSON objects); the limit is ${LIMITS.toolSchemaObjects}.`,
    );
  });

  it('refuses a schema nested deeper than the limit', () => {
    // Each level is two: the schema object and its `properties`.
    expect(messageOf(nested(15))).toBe('ok');
    expect(messageOf(nested(16))).toBe(
      `tools[0].parameters nests arrays and objects more than ${LIMITS.toolSchemaDepth} levels deep.`,
    );
  });

  it('refuses tools whose schemas together pass the limit, each within its own', () => {
    const schema = flat(200); // about 5 KB
    expect(messageOf(schema, 12)).toBe('ok');
    expect(messageOf(schema, 20)).toMatch(
      /^The tools' parameters together are \d+ bytes of JSON; the limit is 64 KB \(65536 bytes\)\.$/,
    );
  });
});

describe('parseToolOutputs', () => {
  it('reads outputs and the compute instance', () => {
    expect(parseToolOutputs({ tool_outputs: [{ tool_call_id: 'a', output: '' }], _compute_instance: 'c' })).toEqual({
      outputs: [{ toolCallId: 'a', output: '' }],
      computeInstance: 'c',
    });
  });

  it('measures the 100 KB limit in UTF-8 bytes', () => {
    const at = (output: string) =>
      codeOf(() => parseToolOutputs({ tool_outputs: [{ tool_call_id: 'a', output }], _compute_instance: 'c' }));
    expect(at('é'.repeat(51_200))).toBe('ok');
    expect(at(`${'é'.repeat(51_200)}x`)).toBe('tool_output_too_large');
  });

  it('checks the shape before the size', () => {
    expect(codeOf(() => parseToolOutputs({ tool_outputs: [], _compute_instance: 'c' }))).toBe('invalid_tool_outputs');
    expect(codeOf(() => parseToolOutputs({ tool_outputs: [{ tool_call_id: 'a', output: 'x'.repeat(200_000) }] }))).toBe(
      'invalid_tool_outputs',
    );
  });
});

describe('resolveCapabilities', () => {
  const all = ['chat', 'research', 'documents', 'code', 'data', 'files'] as const;

  it('offers what the project enables and the plan allows when none are requested', () => {
    expect(resolveCapabilities(undefined, 'free', ['chat', 'documents'], [...all], false)).toEqual([
      'chat',
      'documents',
    ]);
  });

  it('names plan-forbidden capabilities before not-enabled ones', () => {
    expect(codeOf(() => resolveCapabilities(['code'], 'free', ['chat', 'documents'], ['chat'], false))).toBe(
      'plan_restricted',
    );
    expect(codeOf(() => resolveCapabilities(['code'], 'pro', [...all], ['chat'], false))).toBe(
      'capability_not_enabled',
    );
  });

  it('uses only chat with custom tools', () => {
    expect(resolveCapabilities(['chat', 'code'], 'pro', [...all], [...all], true)).toEqual(['chat']);
  });
});
