import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  DestinationRefused,
  describeNetworkError,
  guardedFetch,
  HostAllowList,
  systemResolve,
  type Resolve,
} from '#libs/egress';
import { FETCH_URL_DEFAULTS } from '../research/fetch-url.tool.js';
import {
  boundText,
  toolError,
  toolOk,
  withDefaults,
  type ToolParametersSchema,
  type ToolResult,
  type ToolSpec,
} from '../tool.js';
import { mcpToolName, type McpServerTarget } from '#libs/contracts';

/** Operator settings of MCP calls; the limits are fetch_url's unless changed. */
export interface McpOptions {
  /** Hosts, addresses or CIDRs reachable although not public (fetch_url's allow-list). */
  readonly allowHosts?: readonly string[];
  /** Wall-clock limit of one tool call, connection included, in ms (fetch_url's 10,000). */
  readonly timeoutMs?: number;
  /** Wall-clock limit of listing one server's tools, in ms (4,000: the tool offer is computed within 5 seconds). */
  readonly listTimeoutMs?: number;
  /** Largest response body read, in bytes (fetch_url's 1 MiB). */
  readonly maxBytes?: number;
  /** Text of a result returned to the model, in characters (fetch_url's 100,000). */
  readonly maxOutputChars?: number;
  /** Tools offered from one server (20). */
  readonly maxToolsPerServer?: number;
  readonly resolve?: Resolve;
}

/** Defaults of the MCP limits. */
export const MCP_DEFAULTS = {
  allowHosts: [] as readonly string[],
  timeoutMs: FETCH_URL_DEFAULTS.timeoutMs,
  listTimeoutMs: 4_000,
  maxBytes: FETCH_URL_DEFAULTS.maxBytes,
  maxOutputChars: FETCH_URL_DEFAULTS.maxOutputChars,
  maxToolsPerServer: 20,
  resolve: systemResolve,
} as const;

const MAX_DESCRIPTION_CHARS = 1024;
const MAX_SCHEMA_CHARS = 16 * 1024;
const MAX_LIST_PAGES = 5;
const POLICY_NOTE =
  'MCP servers are reached only at public internet addresses (not loopback, private, link-local or other special ranges) unless the operator allows the host.';
const CLIENT_INFO = { name: 'managed-agent-service', version: '1.0.0' };

/** A server's tools as the model is offered them (`mcp_<server>_<tool>`), or why they could not be listed. */
export async function listMcpTools(
  server: McpServerTarget,
  options: McpOptions = {},
  signal?: AbortSignal,
): Promise<{ ok: true; tools: ToolSpec[]; skipped: string[] } | { ok: false; error: string }> {
  const limits = withDefaults(MCP_DEFAULTS, options);
  const listed = await withClient(server, limits, limits.listTimeoutMs, signal, async (client, request) => {
    const tools: ToolSpec[] = [];
    const skipped: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const listed = await client.listTools(cursor ? { cursor } : {}, request);
      for (const tool of listed.tools) {
        if (server.tools !== null && !server.tools.includes(tool.name)) continue;
        const spec = toSpec(server.name, tool);
        if (!spec || tools.length >= limits.maxToolsPerServer) skipped.push(tool.name);
        else tools.push(spec);
      }
      cursor = listed.nextCursor;
      if (!cursor) break;
    }
    return { tools, skipped };
  });
  return listed.ok ? { ok: true, ...listed.value } : listed;
}

/** Calls tool `tool` of `server`; every failure (refused, down, slow, too large, a tool error) is an `ok: false` result. */
export async function callMcpTool(
  server: McpServerTarget,
  tool: string,
  args: unknown,
  options: McpOptions = {},
  signal?: AbortSignal,
): Promise<ToolResult> {
  const limits = withDefaults(MCP_DEFAULTS, options);
  if (server.tools !== null && !server.tools.includes(tool))
    return toolError(`The tool "${tool}" of the MCP server "${server.name}" is not allowed for this project.`);
  let parsed: unknown = args ?? {};
  if (typeof parsed === 'string') {
    try {
      parsed = parsed.trim() === '' ? {} : JSON.parse(parsed);
    } catch {
      return toolError(`The arguments for ${tool} are not valid JSON.`);
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return toolError(`The arguments for ${tool} must be a JSON object.`);
  const result = await withClient(server, limits, limits.timeoutMs, signal, async (client, request) => {
    const answer = await client.callTool(
      { name: tool, arguments: parsed as Record<string, unknown> },
      undefined,
      request,
    );
    const text = resultText(answer);
    return answer.isError === true
      ? toolError(
          `The MCP tool ${tool} (server "${server.name}") reported an error: ${boundText(text, limits.maxOutputChars)}`,
        )
      : toolOk(boundText(text, limits.maxOutputChars, 'the rest of the result is not shown'));
  });
  return result.ok ? result.value : toolError(result.error);
}

/** Connects, runs `use` within `timeoutMs`, closes; a failure is an error in words, never a throw. */
async function withClient<T>(
  server: McpServerTarget,
  limits: Required<McpOptions>,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  use: (client: Client, request: { signal: AbortSignal; timeout: number }) => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: string }> {
  const allow = HostAllowList.parse(limits.allowHosts);
  if (!(allow instanceof HostAllowList)) return { ok: false, error: `MCP is misconfigured: ${allow.error}.` };
  let url: URL;
  try {
    url = new URL(server.url);
  } catch {
    return { ok: false, error: `The MCP server "${server.name}" has an invalid URL.` };
  }
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const onCancel = (): void => controller.abort();
  signal?.addEventListener('abort', onCancel, { once: true });
  // The MCP SDK (and its zod schemas) load with the first MCP call, not in every worker at start.
  const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  const transport = new StreamableHTTPClientTransport(url, {
    fetch: guardedFetch({
      allow,
      resolve: limits.resolve,
      maxBytes: limits.maxBytes,
      signal: controller.signal,
      what: (target) => `reach the MCP server at ${target.origin}`,
      policyNote: POLICY_NOTE,
      userAgent: `${CLIENT_INFO.name}/${CLIENT_INFO.version}`,
    }),
    requestInit: { headers: { ...server.headers } },
  });
  const client = new Client(CLIENT_INFO);
  const request = { signal: controller.signal, timeout: timeoutMs };
  try {
    await client.connect(transport, request);
    return { ok: true, value: await use(client, request) };
  } catch (e) {
    const cause = refusalIn(e);
    if (cause) return { ok: false, error: cause.message };
    if (signal?.aborted) return { ok: false, error: `The call to the MCP server "${server.name}" was cancelled.` };
    if (controller.signal.aborted)
      return { ok: false, error: `The MCP server "${server.name}" did not answer within ${timeoutMs} ms.` };
    return { ok: false, error: `The MCP server "${server.name}" could not be used: ${describeNetworkError(e)}.` };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onCancel);
    await client.close().catch(() => undefined);
  }
}

/** The SDK wraps what the fetch threw; the guard's refusal is found in the causes. */
function refusalIn(e: unknown): DestinationRefused | undefined {
  for (let cause = e, depth = 0; cause && depth < 5; depth++) {
    if (cause instanceof DestinationRefused) return cause;
    cause = (cause as { cause?: unknown }).cause;
  }
  if (e instanceof Error) {
    const match = /(?:Refused|Could not) reach the MCP server[^\n]*/.exec(e.message);
    if (match) return new DestinationRefused(match[0]);
  }
  return undefined;
}

interface ListedTool {
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly inputSchema: {
    readonly type: 'object';
    readonly properties?: Record<string, unknown>;
    readonly [key: string]: unknown;
  };
}

/** The spec offered for one listed tool, or undefined when its name or schema cannot be offered. */
function toSpec(server: string, tool: ListedTool): ToolSpec | undefined {
  const name = mcpToolName(server, tool.name);
  if (!name) return undefined;
  const { $schema: _ignored, ...schema } = tool.inputSchema;
  const parameters: ToolParametersSchema = { ...schema, type: 'object', properties: schema.properties ?? {} };
  if (JSON.stringify(parameters).length > MAX_SCHEMA_CHARS) return undefined;
  const description = boundText(
    tool.description ?? tool.title ?? `The tool ${tool.name} of the MCP server ${server}.`,
    MAX_DESCRIPTION_CHARS,
  );
  return { name, description, parameters };
}

type ContentItem =
  | { type: 'text'; text: string }
  | { type: 'image' | 'audio'; mimeType: string }
  | { type: 'resource'; resource: { uri: string; text?: string } }
  | { type: 'resource_link'; uri: string; name?: string }
  | { type: string };

/** A tool result as text the model reads: text parts as they are, other parts named. */
function resultText(result: { content?: unknown; structuredContent?: unknown; toolResult?: unknown }): string {
  if (!Array.isArray(result.content)) return JSON.stringify(result.toolResult ?? result.structuredContent ?? null);
  const parts = (result.content as ContentItem[]).map((item) => {
    if (item.type === 'text' && 'text' in item) return item.text;
    if ((item.type === 'image' || item.type === 'audio') && 'mimeType' in item)
      return `[${item.type} (${item.mimeType}) not shown]`;
    if (item.type === 'resource' && 'resource' in item) return item.resource.text ?? `[resource ${item.resource.uri}]`;
    if (item.type === 'resource_link' && 'uri' in item)
      return `[resource link ${item.uri}${item.name ? ` (${item.name})` : ''}]`;
    return `[${item.type} content not shown]`;
  });
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return parts.join('\n');
}
