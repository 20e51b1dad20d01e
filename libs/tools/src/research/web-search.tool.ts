import { defineTool } from '../tool-definition.js';
import { errorMessage, toolError, toolOk, type ToolDefinition } from '../tool.js';

/** One search hit. */
export interface WebSearchResult {
  readonly title: string;
  readonly url: string;
  readonly snippet: string;
}

/** A search engine an operator configures; without one, web_search is not offered. */
export interface WebSearchProvider {
  /** At most `limit` results for `query`; `signal` aborts the search when the caller gives up. */
  search(query: string, limit: number, signal?: AbortSignal): Promise<readonly WebSearchResult[]>;
}

/** Operator settings of web_search. */
export interface WebSearchOptions {
  readonly provider?: WebSearchProvider;
  /** Wall-clock limit of one search, in ms (default 15,000). */
  readonly timeoutMs?: number;
}

/** Defaults of web_search. */
export const WEB_SEARCH_DEFAULTS = { limit: 5, maxLimit: 10, timeoutMs: 15_000, maxSnippetChars: 500 } as const;

/** The note for the response message when web_search cannot be offered. */
export const WEB_SEARCH_UNAVAILABLE = 'web_search is not available: no search provider is configured';

interface WebSearchArgs {
  readonly query: string;
  readonly limit?: number;
}

/** `web_search` (research): searches the web through the configured provider. */
export const webSearchTool: ToolDefinition<WebSearchOptions> = defineTool<WebSearchArgs, WebSearchOptions>(
  'research',
  {
    name: 'web_search',
    description:
      'Search the web. Returns up to `limit` results (title, URL, snippet); read a result in full with fetch_url.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1, maxLength: 500, description: 'What to search for.' },
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: WEB_SEARCH_DEFAULTS.maxLimit,
          description: 'Number of results (default 5).',
        },
      },
      required: ['query'],
      additionalProperties: false,
    },
  },
  async (args, { options, signal }) => {
    const provider = options?.provider;
    if (!provider) return toolError(`${WEB_SEARCH_UNAVAILABLE}.`);
    const query = args.query.trim();
    if (!query) return toolError('The search query is empty.');
    const limit = args.limit ?? WEB_SEARCH_DEFAULTS.limit;
    const timeoutMs = options.timeoutMs ?? WEB_SEARCH_DEFAULTS.timeoutMs;

    const controller = new AbortController();
    const onCancel = (): void => controller.abort();
    signal?.addEventListener('abort', onCancel, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        reject(new Error(`no answer within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    let results: readonly WebSearchResult[];
    try {
      results = await Promise.race([provider.search(query, limit, controller.signal), timeout]);
    } catch (e) {
      return toolError(`Web search for "${query}" failed: ${errorMessage(e)}.`);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onCancel);
    }
    const valid = (Array.isArray(results) ? results : []).filter(isResult).slice(0, limit);
    if (valid.length === 0) return toolOk(`No results for "${query}".`);
    const lines = valid.map((r, i) => {
      const snippet = oneLine(r.snippet);
      const cut =
        snippet.length > WEB_SEARCH_DEFAULTS.maxSnippetChars
          ? `${snippet.slice(0, WEB_SEARCH_DEFAULTS.maxSnippetChars)}…`
          : snippet;
      return `${i + 1}. ${oneLine(r.title).slice(0, 300) || '(untitled)'}\n   ${r.url.slice(0, 2048)}${cut ? `\n   ${cut}` : ''}`;
    });
    return toolOk(`Results for "${query}":\n${lines.join('\n')}`);
  },
);

function isResult(value: unknown): value is WebSearchResult {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  return typeof r['title'] === 'string' && typeof r['url'] === 'string' && typeof r['snippet'] === 'string';
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
