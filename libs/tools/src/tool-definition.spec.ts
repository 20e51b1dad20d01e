import { defineTool, validateToolArguments } from './tool-definition.js';
import { toolOk, type ToolSpec } from './tool.js';

const spec: ToolSpec = {
  name: 'demo_tool',
  description: 'A tool for tests.',
  parameters: {
    type: 'object',
    properties: {
      text: { type: 'string', minLength: 1, maxLength: 5 },
      count: { type: 'integer', minimum: 1 },
      mode: { type: 'string', enum: ['a', 'b'] },
    },
    required: ['text'],
    additionalProperties: false,
  },
};

describe('validateToolArguments', () => {
  it('accepts valid arguments as they are', () => {
    expect(validateToolArguments(spec, { text: 'hi', count: 2, mode: 'a' })).toEqual({
      ok: true,
      value: { text: 'hi', count: 2, mode: 'a' },
    });
  });

  it('lists every problem in words', () => {
    expect(validateToolArguments(spec, { text: 'too long', count: 1.5, mode: 'c', extra: true })).toEqual({
      ok: false,
      error:
        'Invalid arguments for demo_tool: arguments has an unknown property "extra"; arguments.text must NOT have more than 5 characters; ' +
        'arguments.count must be integer; arguments.mode must be one of ["a","b"].',
    });
  });

  it.each([
    [null, 'Invalid arguments for demo_tool: arguments must be object.'],
    [[], 'Invalid arguments for demo_tool: arguments must be object.'],
    ['{"text":"x"}', 'Invalid arguments for demo_tool: arguments must be object.'],
    [{}, 'Invalid arguments for demo_tool: arguments is missing the required property "text".'],
  ])('refuses %p', (args, error) => {
    expect(validateToolArguments(spec, args)).toEqual({ ok: false, error });
  });
});

describe('defineTool', () => {
  it('runs the tool on valid arguments only', async () => {
    const calls: unknown[] = [];
    const tool = defineTool<{ text: string }, undefined>('chat', spec, async (args) => {
      calls.push(args);
      return toolOk(args.text.toUpperCase());
    });
    await expect(tool.run({ text: 'hey' })).resolves.toEqual({ ok: true, output: 'HEY' });
    await expect(tool.run({ text: '' })).resolves.toEqual({
      ok: false,
      error: 'Invalid arguments for demo_tool: arguments.text must NOT have fewer than 1 characters.',
    });
    expect(calls).toEqual([{ text: 'hey' }]);
  });

  it('turns an unexpected throw into ok: false', async () => {
    const tool = defineTool<{ text: string }, undefined>('chat', spec, async () => {
      throw new Error('disk on fire');
    });
    await expect(tool.run({ text: 'x' })).resolves.toEqual({
      ok: false,
      error: 'demo_tool failed unexpectedly: disk on fire',
    });
  });

  it('does not start once cancelled', async () => {
    const tool = defineTool<{ text: string }, undefined>('chat', spec, async () => toolOk('ran'));
    const controller = new AbortController();
    controller.abort();
    await expect(tool.run({ text: 'x' }, { signal: controller.signal })).resolves.toEqual({
      ok: false,
      error: 'demo_tool was cancelled before it started.',
    });
  });
});
