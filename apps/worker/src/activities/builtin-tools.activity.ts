import type { AgentActivities } from '#libs/contracts';
import type { BlobStore } from '#libs/persistence';

/** The built-in tools of the capabilities, run as activities. */
export class BuiltinToolActivities {
  constructor(private readonly blobs: BlobStore) {}

  readonly builtinTools: AgentActivities['builtinTools'] = async () => ({ tools: [], notes: [] });

  readonly runBuiltinTool: AgentActivities['runBuiltinTool'] = async ({ call }) => ({ ok: false, output: `Unknown tool "${call.name}".`, files: [] });
}
