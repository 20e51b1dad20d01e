import { mcpServerNameFromUrl, mcpServerNameProblem, mcpToolName, parseMcpToolName } from './mcp.js';

describe('MCP names', () => {
  it('names a server tool mcp_<server>_<tool> and reads it back, underscores in the tool included', () => {
    expect(mcpToolName('docs', 'search_pages')).toBe('mcp_docs_search_pages');
    expect(parseMcpToolName('mcp_docs_search_pages')).toEqual({ server: 'docs', tool: 'search_pages' });
    expect(parseMcpToolName('mcp_my-server_get')).toEqual({ server: 'my-server', tool: 'get' });
  });

  it('offers no name a provider would refuse', () => {
    expect(mcpToolName('docs', 'search.pages')).toBeUndefined();
    expect(mcpToolName('docs', 'x'.repeat(60))).toBeUndefined();
    expect(mcpToolName('Docs', 'get')).toBeUndefined();
  });

  it('reads no MCP tool out of other names', () => {
    for (const name of ['fetch_url', 'mcp_', 'mcp_docs', 'mcp_docs_', 'mcp__get', 'mcp_Docs_get'])
      expect(parseMcpToolName(name)).toBeUndefined();
  });

  it('checks server names and derives one from a URL', () => {
    expect(mcpServerNameProblem('weather-2')).toBeUndefined();
    for (const bad of ['', 'has_underscore', 'Upper', '-lead', 'x'.repeat(25)])
      expect(mcpServerNameProblem(bad)).toContain('is not a valid MCP server name');
    expect(mcpServerNameFromUrl(new URL('https://mcp.Example.com/v1/mcp'))).toBe('mcp-example-com');
    expect(mcpServerNameFromUrl(new URL('http://127.0.0.1:8080/mcp'))).toBe('127-0-0-1');
    expect(
      mcpServerNameProblem(mcpServerNameFromUrl(new URL('https://a-very-long-host-name-for-mcp.example.com/'))),
    ).toBeUndefined();
  });
});
