import { modelFormProblem, privateAddressRefusal, urlProblem } from './customer-words.js';

describe("refusals in the customer's words", () => {
  it('says what is wrong with a URL, naming no flag or setting of the operator', () => {
    expect(urlProblem('not a url', 'webhook')).toMatch(/^Enter a full URL/);
    expect(urlProblem('ftp://example.com/x', 'mcp')).toBe('The URL must start with https:// (or http://).');
    expect(urlProblem('https://u:p@mcp.example.com/mcp', 'mcp')).toContain('Auth header');
    expect(urlProblem('https://u:p@example.com/hook', 'webhook')).toContain('signed');
    expect(urlProblem(`https://example.com/${'a'.repeat(2100)}`, 'mcp')).toMatch(/too long/);
    expect(urlProblem('https://example.com/hook', 'webhook')).toBeNull();
    for (const text of [urlProblem('https://u:p@x.example/m', 'mcp')!, privateAddressRefusal('http://10.0.0.1/h')])
      expect(text).not.toMatch(/--[a-z]|[A-Z]{3,}_[A-Z]/);
    expect(privateAddressRefusal('http://10.0.0.1/h')).toContain('10.0.0.1');
  });

  it("names the model form's fields for a provider's missing settings", () => {
    expect(modelFormProblem('bedrock', {})).toContain('fill in Region');
    expect(modelFormProblem('bedrock', { region: 'us-east-1' })).toBeNull();
    expect(modelFormProblem('azure-openai', {})).toContain('fill in Resource');
    expect(modelFormProblem('azure-openai', { baseUrl: 'https://x.example/openai' })).toBeNull();
    expect(modelFormProblem('openai', {})).toBeNull();
  });
});
