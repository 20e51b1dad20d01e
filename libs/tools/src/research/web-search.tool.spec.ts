import { webSearchTool, type WebSearchProvider, type WebSearchResult } from './web-search.tool.js';

function providerOf(
  results: readonly WebSearchResult[],
  seen: { query?: string; limit?: number } = {},
): WebSearchProvider {
  return {
    search: async (query, limit) => {
      seen.query = query;
      seen.limit = limit;
      return results;
    },
  };
}

describe('web_search', () => {
  it('lists the provider results', async () => {
    const seen: { query?: string; limit?: number } = {};
    const provider = providerOf(
      [
        { title: 'DuckDB', url: 'https://duckdb.org/', snippet: 'An in-process\nSQL OLAP database.' },
        { title: 'QuickJS', url: 'https://bellard.org/quickjs/', snippet: '' },
      ],
      seen,
    );
    await expect(
      webSearchTool.run({ query: '  embedded engines ', limit: 3 }, { options: { provider } }),
    ).resolves.toEqual({
      ok: true,
      output:
        'Results for "embedded engines":\n1. DuckDB\n   https://duckdb.org/\n   An in-process SQL OLAP database.\n2. QuickJS\n   https://bellard.org/quickjs/',
    });
    expect(seen).toEqual({ query: 'embedded engines', limit: 3 });
  });

  it('uses 5 results by default, caps what the provider returns and drops malformed entries', async () => {
    const many = Array.from({ length: 8 }, (_, i) => ({ title: `t${i}`, url: `https://e.com/${i}`, snippet: 's' }));
    const provider: WebSearchProvider = { search: async () => [{ title: 1 } as unknown as WebSearchResult, ...many] };
    const result = await webSearchTool.run({ query: 'x' }, { options: { provider } });
    expect(result.ok && result.output.split('\n').filter((l) => /^\d+\. /.test(l))).toEqual([
      '1. t0',
      '2. t1',
      '3. t2',
      '4. t3',
      '5. t4',
    ]);
  });

  it('says when nothing was found', async () => {
    await expect(webSearchTool.run({ query: 'zzz' }, { options: { provider: providerOf([]) } })).resolves.toEqual({
      ok: true,
      output: 'No results for "zzz".',
    });
  });

  it('is unavailable without a provider', async () => {
    await expect(webSearchTool.run({ query: 'x' })).resolves.toEqual({
      ok: false,
      error: 'web_search is not available: no search provider is configured.',
    });
  });

  it('reports a failing provider and a provider that never answers', async () => {
    const failing: WebSearchProvider = { search: async () => Promise.reject(new Error('quota exceeded')) };
    await expect(webSearchTool.run({ query: 'x' }, { options: { provider: failing } })).resolves.toEqual({
      ok: false,
      error: 'Web search for "x" failed: quota exceeded.',
    });
    let aborted = false;
    const silent: WebSearchProvider = {
      search: (_q, _l, signal) =>
        new Promise(() => {
          signal?.addEventListener('abort', () => {
            aborted = true;
          });
        }),
    };
    await expect(webSearchTool.run({ query: 'x' }, { options: { provider: silent, timeoutMs: 20 } })).resolves.toEqual({
      ok: false,
      error: 'Web search for "x" failed: no answer within 20 ms.',
    });
    expect(aborted).toBe(true);
  });

  it('validates the arguments', async () => {
    await expect(
      webSearchTool.run({ query: '', limit: 50 }, { options: { provider: providerOf([]) } }),
    ).resolves.toEqual({
      ok: false,
      error:
        'Invalid arguments for web_search: arguments.query must NOT have fewer than 1 characters; arguments.limit must be <= 10.',
    });
  });
});
