import type { Capability } from '#libs/contracts';
import { runJavascriptTool, type RunJavascriptOptions } from './code/run-javascript.tool.js';
import { createChartTool, type CreateChartOptions } from './data/create-chart.tool.js';
import { queryDataTool, type QueryDataOptions } from './data/query-data.tool.js';
import { createDocumentTool, type CreateDocumentOptions } from './documents/create-document.tool.js';
import { readFileTool, type ReadFileOptions } from './documents/read-file.tool.js';
import { writeFileTool, type WriteFileOptions } from './files/write-file.tool.js';
import { fetchUrlTool, type FetchUrlOptions } from './research/fetch-url.tool.js';
import { WEB_SEARCH_UNAVAILABLE, webSearchTool, type WebSearchProvider } from './research/web-search.tool.js';
import {
  toolError,
  type ToolContext,
  type ToolDefinition,
  type ToolFile,
  type ToolResult,
  type ToolSpec,
} from './tool.js';

/** Names of the built-in tools. */
export type BuiltInToolName =
  | 'fetch_url'
  | 'web_search'
  | 'read_file'
  | 'create_document'
  | 'run_javascript'
  | 'query_data'
  | 'create_chart'
  | 'write_file';

/** Which built-in tools each capability offers the model. */
export const TOOLS_BY_CAPABILITY: Readonly<Record<Capability, readonly BuiltInToolName[]>> = {
  chat: [],
  research: ['fetch_url', 'web_search'],
  documents: ['read_file', 'create_document'],
  code: ['run_javascript'],
  data: ['query_data', 'create_chart'],
  files: ['write_file'],
};

/** Every built-in tool by name. */
export const BUILT_IN_TOOLS: Readonly<Record<BuiltInToolName, ToolDefinition<unknown>>> = {
  fetch_url: fetchUrlTool,
  web_search: webSearchTool,
  read_file: readFileTool,
  create_document: createDocumentTool,
  run_javascript: runJavascriptTool,
  query_data: queryDataTool,
  create_chart: createChartTool,
  write_file: writeFileTool,
};

/** Operator configuration of the built-in tools; everything is optional and has safe defaults. */
export interface BuiltInToolsOptions {
  /** The search engine behind web_search; without it web_search is not offered. */
  readonly webSearch?: WebSearchProvider;
  readonly webSearchTimeoutMs?: number;
  readonly fetchUrl?: FetchUrlOptions;
  readonly readFile?: ReadFileOptions;
  readonly createDocument?: CreateDocumentOptions;
  readonly runJavascript?: RunJavascriptOptions;
  readonly queryData?: QueryDataOptions;
  readonly createChart?: CreateChartOptions;
  readonly writeFile?: WriteFileOptions;
}

/** The tools to offer the model for these capabilities, and notes (for the response message) on any left out. */
export function toolSpecsFor(
  capabilities: readonly Capability[],
  options: Pick<BuiltInToolsOptions, 'webSearch'> = {},
): { readonly tools: readonly ToolSpec[]; readonly notes: readonly string[] } {
  const tools: ToolSpec[] = [];
  const notes: string[] = [];
  const seen = new Set<BuiltInToolName>();
  for (const capability of capabilities) {
    for (const name of TOOLS_BY_CAPABILITY[capability] ?? []) {
      if (seen.has(name)) continue;
      seen.add(name);
      if (name === 'web_search' && !options.webSearch) {
        notes.push(WEB_SEARCH_UNAVAILABLE);
        continue;
      }
      tools.push(BUILT_IN_TOOLS[name].spec);
    }
  }
  return { tools, notes };
}

/** Whether `name` is a built-in tool. */
export function isBuiltInToolName(name: string): name is BuiltInToolName {
  return Object.hasOwn(BUILT_IN_TOOLS, name);
}

/** Everything one built-in tool call needs besides its arguments. */
export interface BuiltInToolCallContext {
  readonly inputFiles?: readonly ToolFile[];
  readonly options?: BuiltInToolsOptions;
  /** When given, a tool outside these capabilities is refused (the model may name a tool it was not offered). */
  readonly capabilities?: readonly Capability[];
  readonly signal?: AbortSignal;
}

/**
 * Runs one built-in tool call. Arguments may be the parsed object or the JSON text a model sends;
 * every failure, including an unknown tool or malformed JSON, is an `ok: false` result.
 */
export async function executeBuiltInTool(
  name: string,
  args: unknown,
  context: BuiltInToolCallContext = {},
): Promise<ToolResult> {
  if (!isBuiltInToolName(name)) {
    return toolError(
      `There is no built-in tool named "${name}". Built-in tools: ${Object.keys(BUILT_IN_TOOLS).join(', ')}.`,
    );
  }
  const tool = BUILT_IN_TOOLS[name];
  if (context.capabilities && !context.capabilities.includes(tool.capability)) {
    return toolError(
      `${name} is not available in this request: it belongs to the "${tool.capability}" capability, which is not in use.`,
    );
  }
  let parsed = args;
  if (typeof args === 'string') {
    try {
      parsed = args.trim() === '' ? {} : JSON.parse(args);
    } catch {
      return toolError(`The arguments for ${name} are not valid JSON.`);
    }
  }
  const options = context.options ?? {};
  const base: Omit<ToolContext, 'options'> = {
    ...(context.inputFiles ? { inputFiles: context.inputFiles } : {}),
    ...(context.signal ? { signal: context.signal } : {}),
  };
  switch (name) {
    case 'fetch_url':
      return fetchUrlTool.run(parsed, { ...base, options: options.fetchUrl ?? {} });
    case 'web_search':
      return webSearchTool.run(parsed, {
        ...base,
        options: {
          ...(options.webSearch ? { provider: options.webSearch } : {}),
          ...(options.webSearchTimeoutMs ? { timeoutMs: options.webSearchTimeoutMs } : {}),
        },
      });
    case 'read_file':
      return readFileTool.run(parsed, { ...base, options: options.readFile ?? {} });
    case 'create_document':
      return createDocumentTool.run(parsed, { ...base, options: options.createDocument ?? {} });
    case 'run_javascript':
      return runJavascriptTool.run(parsed, { ...base, options: options.runJavascript ?? {} });
    case 'query_data':
      return queryDataTool.run(parsed, { ...base, options: options.queryData ?? {} });
    case 'create_chart':
      return createChartTool.run(parsed, { ...base, options: options.createChart ?? {} });
    case 'write_file':
      return writeFileTool.run(parsed, { ...base, options: options.writeFile ?? {} });
  }
}
