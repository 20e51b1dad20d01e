// MCP servers (DESIGN.md section 9): how they and their tools are named, and what a run needs to
// reach one. The model sees a server's tool `t` as `mcp_<server>_<t>`; server names hold no `_`, so the first `_` after the prefix ends the server.

/** A server name: lower-case letters, digits and `-`, 1 to 24 characters, starting with a letter or digit. */
export const MCP_SERVER_NAME = /^[a-z0-9][a-z0-9-]{0,23}$/;

/** The names providers accept for a function the model may call. */
const OFFERED_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const PREFIX = 'mcp_';

/** Why `name` cannot name an MCP server, or undefined when it can. */
export function mcpServerNameProblem(name: string): string | undefined {
  return MCP_SERVER_NAME.test(name)
    ? undefined
    : `"${name}" is not a valid MCP server name (1 to 24 characters: a-z, 0-9 and "-", starting with a letter or digit)`;
}

/** A server name made from a URL's host when the operator gives none: `mcp.example.com` -> `mcp-example-com`. */
export function mcpServerNameFromUrl(url: URL): string {
  const name = url.hostname
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, 24)
    .replace(/-+$/, '');
  return name || 'mcp';
}

/** The name the model is offered for tool `tool` of server `server`, or undefined when it would not be a valid function name. */
export function mcpToolName(server: string, tool: string): string | undefined {
  const name = `${PREFIX}${server}_${tool}`;
  return MCP_SERVER_NAME.test(server) && OFFERED_TOOL_NAME.test(name) ? name : undefined;
}

/** Whether the model called an MCP tool (by its name's prefix). */
export function isMcpToolName(name: string): boolean {
  return name.startsWith(PREFIX);
}

/** The server and tool an offered name stands for, or undefined when it is not an MCP tool's name. */
export function parseMcpToolName(name: string): { readonly server: string; readonly tool: string } | undefined {
  if (!isMcpToolName(name)) return undefined;
  const rest = name.slice(PREFIX.length);
  const cut = rest.indexOf('_');
  if (cut <= 0 || cut === rest.length - 1) return undefined;
  const server = rest.slice(0, cut);
  const tool = rest.slice(cut + 1);
  return MCP_SERVER_NAME.test(server) ? { server, tool } : undefined;
}

/** An MCP server a project configured, as a run reaches it (the auth header decrypted: it stays
 * inside the activity that lists or calls the server, never in workflow history or logs). */
export interface McpServerTarget {
  readonly name: string;
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** The tool names the operator allowed; null: every tool the server lists. */
  readonly tools: readonly string[] | null;
}
