import { Logger } from '@nestjs/common';
import { ApplicationFailure, Context, heartbeat } from '@temporalio/activity';
import {
  CAPABILITIES,
  parseMcpToolName,
  type AgentActivities,
  type BuiltinTool,
  type Capability,
  type FileRef,
  type McpServerTarget,
  type ToolSpec,
} from '#libs/contracts';
import { toolRuns } from '#libs/observability';
import type { BlobStore, ConversationStore, FileStore } from '#libs/persistence';
import {
  callMcpTool,
  executeBuiltInTool,
  listMcpTools,
  toolError,
  toolFileFromInput,
  toolSpecsFor,
  TOOLS_BY_CAPABILITY,
  type BuiltInToolsOptions,
  type McpOptions,
  type ToolFile,
  type ToolResult,
} from '#libs/tools';

/** A project's MCP servers (libs/accounts' McpServersService), and how they are reached. */
export interface McpSource {
  readonly servers: { targets(projectId: string): Promise<McpServerTarget[]> };
  readonly options: McpOptions;
}

/** The capabilities' built-in tools (libs/tools), run as activities by reference: a call's
 * arguments are read from the stored conversation and its output is stored there. Generated files
 * are stored too; only their ids travel through the workflow. */
export class BuiltinToolActivities {
  private readonly logger = new Logger('builtin-tools');

  constructor(
    private readonly blobs: BlobStore,
    private readonly files: FileStore,
    private readonly conversations: ConversationStore,
    private readonly options: BuiltInToolsOptions = {},
    private readonly mcp?: McpSource,
  ) {}

  /** The tools offered for the capabilities (part of beginRequest): the built-in ones and, with
   * research, the project's MCP servers' tools, listed here once per run (a server that cannot be
   * listed offers none). */
  readonly builtinTools = async ({
    capabilities,
    projectId,
  }: {
    capabilities: readonly Capability[];
    projectId: string;
  }): Promise<{ tools: BuiltinTool[]; notes: readonly string[] }> => {
    const { tools, notes } = toolSpecsFor(capabilities, { webSearch: this.options.webSearch });
    const capabilityOf = (name: string): Capability =>
      CAPABILITIES.find((c) => (TOOLS_BY_CAPABILITY[c] as readonly string[]).includes(name)) ?? 'chat';
    const builtin = tools.map((t) => ({ ...t, parameters: { ...t.parameters }, capability: capabilityOf(t.name) }));
    const mcp = capabilities.includes('research') ? await this.mcpTools(projectId) : [];
    return { tools: [...builtin, ...mcp.map((t) => ({ ...t, capability: 'research' as const }))], notes };
  };

  private async mcpTools(projectId: string): Promise<ToolSpec[]> {
    if (!this.mcp) return [];
    const { options } = this.mcp;
    const servers = await this.mcp.servers.targets(projectId);
    const listed = await Promise.all(servers.map((server) => listMcpTools(server, options)));
    return listed.flatMap((result, i) => {
      const server = servers[i]?.name;
      if (!result.ok)
        this.logger.warn(`project ${projectId}: the tools of MCP server "${server}" are not offered: ${result.error}`);
      else if (result.skipped.length)
        this.logger.warn(
          `project ${projectId}: MCP server "${server}" tools not offered (name, schema or count over the limits): ${result.skipped.join(', ')}`,
        );
      return result.ok ? result.tools : [];
    });
  }

  /** An MCP tool call: the server is the project's by that name now; its tool must still be allowed. */
  private async runMcpTool(projectId: string, name: string, args: unknown): Promise<ToolResult> {
    const parsed = parseMcpToolName(name);
    const server =
      parsed && this.mcp
        ? (await this.mcp.servers.targets(projectId)).find((s) => s.name === parsed.server)
        : undefined;
    if (!parsed || !server || !this.mcp)
      return toolError(`The MCP server of "${name}" is no longer configured for this project.`);
    return callMcpTool(server, parsed.tool, args, this.mcp.options, Context.current().cancellationSignal);
  }

  readonly runBuiltinTool: AgentActivities['runBuiltinTool'] = async ({
    requestId,
    projectId,
    conversationId,
    callSeq,
    callId,
    at,
    files,
  }) => {
    const stored = await this.conversations.message(conversationId, projectId, callSeq);
    const call =
      stored?.message.role === 'assistant' ? stored.message.toolCalls?.find((c) => c.id === callId) : undefined;
    if (!call)
      throw ApplicationFailure.create({
        type: 'compute_error',
        message: `Tool call ${callId} is not in the stored conversation.`,
        nonRetryable: true,
      });
    const inputFiles: ToolFile[] = [];
    for (const ref of files) {
      const blob = await this.blobs.get(ref.blobId, projectId);
      if (blob) inputFiles.push(toolFileFromInput({ name: ref.name, content: blob.content }));
    }
    heartbeat();
    const result = parseMcpToolName(call.name)
      ? await this.runMcpTool(projectId, call.name, call.arguments)
      : await executeBuiltInTool(call.name, call.arguments, { inputFiles, options: this.options });
    toolRuns.inc({ tool: call.name, outcome: result.ok ? 'ok' : 'error' });
    const generated: FileRef[] = [];
    for (const file of result.ok ? (result.files ?? []) : []) {
      const id = await this.files.put(projectId, requestId, {
        name: file.name,
        mediaType: file.mediaType,
        encoding: file.encoding,
        content: file.content,
      });
      generated.push({ id, name: file.name });
    }
    const output = result.ok ? result.output : `Error: ${result.error}`;
    await this.conversations.put(
      conversationId,
      projectId,
      at,
      [{ role: 'tool', toolCallId: call.id, name: call.name, content: output }],
      Context.current().info.attempt,
    );
    return { ok: result.ok, files: generated };
  };
}
