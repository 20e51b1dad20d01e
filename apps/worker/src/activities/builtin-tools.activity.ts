import { ApplicationFailure, Context, heartbeat } from '@temporalio/activity';
import { CAPABILITIES, type AgentActivities, type Capability, type FileRef } from '#libs/contracts';
import { toolRuns } from '#libs/observability';
import type { BlobStore, ConversationStore, FileStore } from '#libs/persistence';
import { executeBuiltInTool, toolFileFromInput, toolSpecsFor, TOOLS_BY_CAPABILITY, type BuiltInToolsOptions, type ToolFile } from '#libs/tools';

/** The capabilities' built-in tools (libs/tools), run as activities by reference: a call's
 * arguments are read from the stored conversation and its output is stored there. Generated files
 * are stored too; only their ids travel through the workflow. */
export class BuiltinToolActivities {
  constructor(
    private readonly blobs: BlobStore,
    private readonly files: FileStore,
    private readonly conversations: ConversationStore,
    private readonly options: BuiltInToolsOptions = {},
  ) {}

  readonly builtinTools: AgentActivities['builtinTools'] = async ({ capabilities }) => {
    const { tools, notes } = toolSpecsFor(capabilities, { webSearch: this.options.webSearch });
    const capabilityOf = (name: string): Capability => CAPABILITIES.find((c) => (TOOLS_BY_CAPABILITY[c] as readonly string[]).includes(name)) ?? 'chat';
    return { tools: tools.map((t) => ({ ...t, parameters: { ...t.parameters }, capability: capabilityOf(t.name) })), notes };
  };

  readonly runBuiltinTool: AgentActivities['runBuiltinTool'] = async ({ requestId, projectId, conversationId, callSeq, callId, at, files }) => {
    const stored = await this.conversations.message(conversationId, projectId, callSeq);
    const call = stored?.message.role === 'assistant' ? stored.message.toolCalls?.find((c) => c.id === callId) : undefined;
    if (!call) throw ApplicationFailure.create({ type: 'compute_error', message: `Tool call ${callId} is not in the stored conversation.`, nonRetryable: true });
    const inputFiles: ToolFile[] = [];
    for (const ref of files) {
      const blob = await this.blobs.get(ref.blobId, projectId);
      if (blob) inputFiles.push(toolFileFromInput({ name: ref.name, content: blob.content }));
    }
    heartbeat();
    const result = await executeBuiltInTool(call.name, call.arguments, { inputFiles, options: this.options });
    toolRuns.inc({ tool: call.name, outcome: result.ok ? 'ok' : 'error' });
    const generated: FileRef[] = [];
    for (const file of result.ok ? (result.files ?? []) : []) {
      const id = await this.files.put(projectId, requestId, { name: file.name, mediaType: file.mediaType, encoding: file.encoding, content: file.content });
      generated.push({ id, name: file.name });
    }
    const output = result.ok ? result.output : `Error: ${result.error}`;
    await this.conversations.put(conversationId, projectId, at, [{ role: 'tool', toolCallId: call.id, name: call.name, content: output }], Context.current().info.attempt);
    return { ok: result.ok, files: generated };
  };
}
