import { ServiceError } from '#libs/contracts';
import { parseAgentRequest, parseToolOutputs, resolveCapabilities } from './agent-request.validation.js';

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
    expect(parseAgentRequest({ message: 'hi', extra: 1 })).toEqual({ message: 'hi', capabilities: undefined, files: [], stream: false, tools: [] });
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
    expect(codeOf(() => parseAgentRequest({ message: 'hi', files: [{ name: '', content: 'x' }] }))).toBe('invalid_files');
    expect(codeOf(() => parseAgentRequest({ message: 'hi', files: [{ name: 'a', content: 'é'.repeat(524_288) }] }))).toBe('ok');
    expect(codeOf(() => parseAgentRequest({ message: 'hi', files: [{ name: 'a', content: `${'é'.repeat(524_288)}x` }] }))).toBe('invalid_files');
    const tool = { name: 't', description: 'd', parameters: { type: 'object' } };
    expect(codeOf(() => parseAgentRequest({ message: 'hi', tools: [tool, tool] }))).toBe('invalid_tools');
    expect(codeOf(() => parseAgentRequest({ message: 'hi', tools: [{ ...tool, description: undefined }] }))).toBe('invalid_tools');
    expect(codeOf(() => parseAgentRequest({ message: 'hi', tools: [tool], stream: true }))).toBe('stream_not_supported');
  });
});

describe('parseToolOutputs', () => {
  it('reads outputs and the compute instance', () => {
    expect(parseToolOutputs({ tool_outputs: [{ tool_call_id: 'a', output: '' }], _compute_instance: 'c' })).toEqual({ outputs: [{ toolCallId: 'a', output: '' }], computeInstance: 'c' });
  });

  it('measures the 100 KB limit in UTF-8 bytes', () => {
    const at = (output: string) => codeOf(() => parseToolOutputs({ tool_outputs: [{ tool_call_id: 'a', output }], _compute_instance: 'c' }));
    expect(at('é'.repeat(51_200))).toBe('ok');
    expect(at(`${'é'.repeat(51_200)}x`)).toBe('tool_output_too_large');
  });

  it('checks the shape before the size', () => {
    expect(codeOf(() => parseToolOutputs({ tool_outputs: [], _compute_instance: 'c' }))).toBe('invalid_tool_outputs');
    expect(codeOf(() => parseToolOutputs({ tool_outputs: [{ tool_call_id: 'a', output: 'x'.repeat(200_000) }] }))).toBe('invalid_tool_outputs');
  });
});

describe('resolveCapabilities', () => {
  const all = ['chat', 'research', 'documents', 'code', 'data', 'files'] as const;

  it('offers what the project enables and the plan allows when none are requested', () => {
    expect(resolveCapabilities(undefined, 'free', ['chat', 'documents'], [...all], false)).toEqual(['chat', 'documents']);
  });

  it('names plan-forbidden capabilities before not-enabled ones', () => {
    expect(codeOf(() => resolveCapabilities(['code'], 'free', ['chat', 'documents'], ['chat'], false))).toBe('plan_restricted');
    expect(codeOf(() => resolveCapabilities(['code'], 'pro', [...all], ['chat'], false))).toBe('capability_not_enabled');
  });

  it('uses only chat with custom tools', () => {
    expect(resolveCapabilities(['chat', 'code'], 'pro', [...all], [...all], true)).toEqual(['chat']);
  });
});
