export * from './tool.js';
export { defineTool, validateToolArguments } from './tool-definition.js';
export * from './tool.registry.js';

export {
  runJavascriptTool,
  RUN_JAVASCRIPT_DEFAULTS,
  RUN_JAVASCRIPT_MAX_CODE_CHARS,
  type RunJavascriptOptions,
} from './code/run-javascript.tool.js';

export { fetchUrlTool, FETCH_URL_DEFAULTS, type FetchUrlOptions } from './research/fetch-url.tool.js';
export {
  webSearchTool,
  WEB_SEARCH_DEFAULTS,
  WEB_SEARCH_UNAVAILABLE,
  type WebSearchOptions,
  type WebSearchProvider,
  type WebSearchResult,
} from './research/web-search.tool.js';

export { readFileTool, READ_FILE_DEFAULTS, type ReadFileOptions } from './documents/read-file.tool.js';
export {
  createDocumentTool,
  CREATE_DOCUMENT_DEFAULTS,
  type CreateDocumentOptions,
} from './documents/create-document.tool.js';

export { queryDataTool, QUERY_DATA_DEFAULTS, type QueryDataOptions } from './data/query-data.tool.js';
export {
  createChartTool,
  CREATE_CHART_DEFAULTS,
  MAX_CHART_ROWS,
  type CreateChartOptions,
} from './data/create-chart.tool.js';
export { renderChartSvg } from './data/chart.renderer.js';
export { DATA_FILE_EXTENSIONS, isDataFileName, tableNameFor, tableNamesFor } from './data/table-name.util.js';

export { writeFileTool, WRITE_FILE_MAX_BYTES, type WriteFileOptions } from './files/write-file.tool.js';
export { describeInputFiles } from './files/input-files.util.js';
export {
  fileNameProblem,
  isBinaryFileName,
  mediaTypeFor,
  toolFileBytes,
  toolFileFromInput,
  toolFileText,
} from './files/tool-file.util.js';

export { callMcpTool, listMcpTools, MCP_DEFAULTS, type McpOptions } from './mcp/mcp.client.js';
