import { Option, type Command } from 'commander';
import type { McpServersService, McpServerView } from '#libs/accounts';
import type { CliIo } from './cli.js';
import { CliRefusal } from './refusal.js';

/** What the mcp commands need from the CLI around them. */
export interface McpCommandsContext {
  readonly io: CliIo;
  mcpServers(): Promise<McpServersService>;
  print(json: boolean, value: unknown, text: string): void;
}

const serverView = (s: McpServerView) => ({
  id: s.id,
  project_id: s.projectId,
  name: s.name,
  url: s.url,
  header: s.headerName,
  header_set: s.headerName !== null,
  tools: s.tools,
  created_at: s.createdAt.toISOString(),
});

const serverText = (s: McpServerView): string =>
  `${s.id}  ${s.name}  ${s.url}  tools: ${s.tools?.join(',') ?? 'all listed'}${s.headerName ? `  ${s.headerName} header set` : ''}`;

/** `mcp add|list|remove`: a project's MCP servers, whose tools runs offer with the research capability. */
export function addMcpCommands(program: Command, context: McpCommandsContext): void {
  const { io, print } = context;
  const json = (): Option => new Option('--json', 'print JSON instead of text');
  // Through program.command, so the subcommands inherit the program's output and exit handling.
  const mcp = program
    .command('mcp')
    .description(
      "a project's MCP servers (Streamable HTTP): their tools are offered with the research capability as mcp_<server>_<tool>",
    );
  mcp
    .command('add')
    .description(
      'add an MCP server; the auth header value is read from an environment variable, never from the command line, and stored encrypted',
    )
    .argument('<project>', 'project id or name')
    .requiredOption('--url <url>', 'the Streamable HTTP endpoint, e.g. https://mcp.example.com/mcp')
    .option('--name <server>', 'server name in tool names (a-z, 0-9, "-"; default: made from the URL host)')
    .option('--header-from-env <VAR>', 'read the auth header value from this environment variable')
    .option('--header-name <name>', 'the auth header to send', 'Authorization')
    .option(
      '--tools <list>',
      'comma-separated tool names to allow (default: every tool the server lists)',
      (v: string) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
    )
    .addOption(json())
    .action(
      async (
        ref: string,
        o: { url: string; name?: string; headerFromEnv?: string; headerName: string; tools?: string[]; json?: boolean },
      ) => {
        let header: { name: string; value: string } | null = null;
        if (o.headerFromEnv) {
          const value = io.env[o.headerFromEnv];
          if (!value) throw new CliRefusal(`environment variable ${o.headerFromEnv} is not set`);
          header = { name: o.headerName, value };
        }
        const s = await (
          await context.mcpServers()
        ).add(ref, { url: o.url, name: o.name, header, tools: o.tools ?? null });
        print(
          !!o.json,
          serverView(s),
          `added MCP server ${s.name} (${s.id}) at ${s.url}; tools: ${s.tools?.join(', ') ?? 'every tool it lists'}${s.headerName ? `; ${s.headerName} header stored encrypted` : ''}`,
        );
      },
    );
  mcp
    .command('list')
    .description("list a project's MCP servers (header values are never shown)")
    .argument('<project>', 'project id or name')
    .addOption(json())
    .action(async (ref: string, o: { json?: boolean }) => {
      const servers = await (await context.mcpServers()).list(ref);
      print(!!o.json, servers.map(serverView), servers.map(serverText).join('\n') || 'no MCP servers');
    });
  mcp
    .command('remove')
    .description('remove an MCP server; runs that start afterwards no longer offer its tools')
    .argument('<project>', 'project id or name')
    .argument('<server>', 'server id or name')
    .addOption(json())
    .action(async (ref: string, server: string, o: { json?: boolean }) => {
      const s = await (await context.mcpServers()).remove(ref, server);
      print(!!o.json, serverView(s), `removed MCP server ${s.name} (${s.id})`);
    });
}
