import { BUILT_IN_TOOLS, TOOLS_BY_CAPABILITY, executeBuiltInTool, toolSpecsFor } from './tool.registry.js';
import type { WebSearchProvider } from './research/web-search.tool.js';

const provider: WebSearchProvider = { search: async () => [] };

describe('TOOLS_BY_CAPABILITY', () => {
  it('maps each capability to its tools', () => {
    expect(TOOLS_BY_CAPABILITY).toEqual({
      chat: [],
      research: ['fetch_url', 'web_search'],
      documents: ['read_file', 'create_document'],
      code: ['run_javascript'],
      data: ['query_data', 'create_chart'],
      files: ['write_file'],
    });
  });

  it('offers specs whose names match and whose parameters are object schemas', () => {
    for (const [name, tool] of Object.entries(BUILT_IN_TOOLS)) {
      expect(tool.spec.name).toBe(name);
      expect(tool.spec.parameters.type).toBe('object');
      expect(tool.spec.name).toMatch(/^[a-zA-Z0-9_]{1,64}$/);
      expect(tool.spec.description.length).toBeLessThanOrEqual(1024);
    }
  });
});

describe('toolSpecsFor', () => {
  it('offers nothing for chat', () => {
    expect(toolSpecsFor(['chat'])).toEqual({ tools: [], notes: [] });
  });

  it('leaves web_search out, with a note, when no provider is configured', () => {
    const { tools, notes } = toolSpecsFor(['research', 'code']);
    expect(tools.map((t) => t.name)).toEqual(['fetch_url', 'run_javascript']);
    expect(notes).toEqual(['web_search is not available: no search provider is configured']);
  });

  it('offers web_search when a provider is configured', () => {
    const { tools, notes } = toolSpecsFor(['research'], { webSearch: provider });
    expect(tools.map((t) => t.name)).toEqual(['fetch_url', 'web_search']);
    expect(notes).toEqual([]);
  });

  it('offers each tool once, in capability order', () => {
    const { tools } = toolSpecsFor(['files', 'data', 'documents', 'files']);
    expect(tools.map((t) => t.name)).toEqual([
      'write_file',
      'query_data',
      'create_chart',
      'read_file',
      'create_document',
    ]);
  });
});

describe('executeBuiltInTool', () => {
  it('refuses an unknown tool', async () => {
    await expect(executeBuiltInTool('rm_rf', {})).resolves.toEqual({
      ok: false,
      error:
        'There is no built-in tool named "rm_rf". Built-in tools: fetch_url, web_search, read_file, create_document, run_javascript, query_data, create_chart, write_file.',
    });
  });

  it('refuses a tool outside the capabilities in use', async () => {
    await expect(
      executeBuiltInTool('run_javascript', { code: '1' }, { capabilities: ['chat', 'documents'] }),
    ).resolves.toEqual({
      ok: false,
      error:
        'run_javascript is not available in this request: it belongs to the "code" capability, which is not in use.',
    });
  });

  it('accepts arguments as JSON text and refuses malformed JSON', async () => {
    await expect(executeBuiltInTool('write_file', '{"name":"a.txt","content":"hi"}')).resolves.toEqual({
      ok: true,
      output: 'Wrote a.txt (text/plain, 2 B).',
      files: [{ name: 'a.txt', content: 'hi', encoding: 'utf8', mediaType: 'text/plain' }],
    });
    await expect(executeBuiltInTool('write_file', '{"name":')).resolves.toEqual({
      ok: false,
      error: 'The arguments for write_file are not valid JSON.',
    });
  });

  it('passes the operator options of the tool', async () => {
    await expect(
      executeBuiltInTool('write_file', { name: 'a.txt', content: 'abc' }, { options: { writeFile: { maxBytes: 2 } } }),
    ).resolves.toEqual({
      ok: false,
      error: 'Cannot write "a.txt": it is 3 bytes, over the 2-byte limit per file.',
    });
  });

  it('answers web_search without a provider with the unavailability note', async () => {
    await expect(executeBuiltInTool('web_search', { query: 'x' })).resolves.toEqual({
      ok: false,
      error: 'web_search is not available: no search provider is configured.',
    });
  });
});
