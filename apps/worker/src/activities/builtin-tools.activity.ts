import { heartbeat } from '@temporalio/activity';
import { CAPABILITIES, type AgentActivities, type Capability, type FileRef } from '#libs/contracts';
import type { BlobStore, FileStore } from '#libs/persistence';
import { executeBuiltInTool, toolFileFromInput, toolSpecsFor, TOOLS_BY_CAPABILITY, type BuiltInToolsOptions, type ToolFile } from '#libs/tools';

/** The capabilities' built-in tools (libs/tools), run as activities. Generated files are stored
 * by reference; only their ids travel through the workflow. */
export class BuiltinToolActivities {
  constructor(
    private readonly blobs: BlobStore,
    private readonly files: FileStore,
    private readonly options: BuiltInToolsOptions = {},
  ) {}

  readonly builtinTools: AgentActivities['builtinTools'] = async ({ capabilities }) => {
    const { tools, notes } = toolSpecsFor(capabilities, { webSearch: this.options.webSearch });
    const capabilityOf = (name: string): Capability => CAPABILITIES.find((c) => (TOOLS_BY_CAPABILITY[c] as readonly string[]).includes(name)) ?? 'chat';
    return { tools: tools.map((t) => ({ ...t, parameters: { ...t.parameters }, capability: capabilityOf(t.name) })), notes };
  };

  readonly runBuiltinTool: AgentActivities['runBuiltinTool'] = async ({ requestId, projectId, call, files }) => {
    const inputFiles: ToolFile[] = [];
    for (const ref of files) {
      const blob = await this.blobs.get(ref.blobId, projectId);
      if (blob) inputFiles.push(toolFileFromInput({ name: ref.name, content: blob.content }));
    }
    heartbeat();
    const result = await executeBuiltInTool(call.name, call.arguments, { inputFiles, options: this.options });
    if (!result.ok) return { ok: false, output: `Error: ${result.error}`, files: [] };
    const stored: FileRef[] = [];
    for (const file of result.files ?? []) {
      const id = await this.files.put(projectId, requestId, { name: file.name, mediaType: file.mediaType, encoding: file.encoding, content: file.content });
      stored.push({ id, name: file.name });
    }
    return { ok: true, output: result.output, files: stored };
  };
}
