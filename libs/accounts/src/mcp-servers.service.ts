import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '#libs/config';
import { isUuid, mcpServerNameFromUrl, mcpServerNameProblem, type McpServerTarget } from '#libs/contracts';
import { McpServerEntity } from '#libs/persistence';
import { AccountsError, type AccountsService } from './accounts.service.js';
import { decryptSecret, encryptSecret, masterKeys } from './secrets.js';

/** MCP servers one project may have. */
export const MAX_MCP_SERVERS_PER_PROJECT = 10;
/** Tool names one server may allow. */
export const MAX_MCP_TOOLS_PER_SERVER = 20;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** A project's MCP server as an operator may see it: never the header's value. */
export interface McpServerView {
  readonly id: string;
  readonly projectId: string;
  readonly name: string;
  readonly url: string;
  readonly headerName: string | null;
  readonly tools: readonly string[] | null;
  readonly createdAt: Date;
}

export interface NewMcpServer {
  readonly url: string;
  /** Defaults to a name made from the URL's host. */
  readonly name?: string;
  readonly header?: { readonly name: string; readonly value: string } | null;
  /** The tool names allowed; omitted: every tool the server lists. */
  readonly tools?: readonly string[] | null;
}

/** The MCP servers of projects (DESIGN.md section 9): the only writer of `mcp_servers`. */
export class McpServersService {
  constructor(
    private readonly db: DataSource,
    private readonly config: Pick<AppConfig, 'masterKey'> & Partial<Pick<AppConfig, 'previousMasterKeys'>>,
    private readonly accounts: Pick<AccountsService, 'findProject'>,
  ) {}

  async add(projectRef: string, input: NewMcpServer): Promise<McpServerView> {
    const url = parseServerUrl(input.url);
    const name = input.name ?? mcpServerNameFromUrl(url);
    const nameProblem = mcpServerNameProblem(name);
    if (nameProblem) throw new AccountsError(nameProblem);
    const tools = checkTools(input.tools);
    if (input.header && !HEADER_NAME.test(input.header.name))
      throw new AccountsError(`"${input.header.name}" is not a valid HTTP header name`);
    if (input.header && (!input.header.value || /[\r\n\0]/.test(input.header.value)))
      throw new AccountsError('the header value is empty or holds a line break');
    const project = await this.accounts.findProject(projectRef);
    const id = randomUUID();
    return this.db.transaction(async (tx) => {
      // Serialises adds to the project, so the count and the unique name hold together.
      await tx.query(`select 1 from projects where id = $1 for update`, [project.id]);
      const repo = tx.getRepository(McpServerEntity);
      if ((await repo.countBy({ projectId: project.id })) >= MAX_MCP_SERVERS_PER_PROJECT)
        throw new AccountsError(`a project may have at most ${MAX_MCP_SERVERS_PER_PROJECT} MCP servers`);
      if (await repo.existsBy({ projectId: project.id, name }))
        throw new AccountsError(
          `project ${project.name} already has an MCP server named "${name}" (give another with --name)`,
        );
      const row = await repo.save(
        repo.create({
          id,
          projectId: project.id,
          name,
          url: url.href,
          headerName: input.header?.name ?? null,
          headerCiphertext: input.header
            ? encryptSecret(input.header.value, this.config.masterKey, secretContext(project.id, id))
            : null,
          tools,
        }),
      );
      return view(row);
    });
  }

  async list(projectRef: string): Promise<McpServerView[]> {
    const project = await this.accounts.findProject(projectRef);
    const rows = await this.db
      .getRepository(McpServerEntity)
      .find({ where: { projectId: project.id }, order: { createdAt: 'ASC', name: 'ASC' } });
    return rows.map(view);
  }

  /** Changes the tool names a server allows (null: every tool it lists); runs that start
   * afterwards offer those. */
  async setTools(projectRef: string, ref: string, tools: readonly string[] | null): Promise<McpServerView> {
    const checked = checkTools(tools);
    const project = await this.accounts.findProject(projectRef);
    const repo = this.db.getRepository(McpServerEntity);
    const row = await repo.findOneBy(
      isUuid(ref) ? { projectId: project.id, id: ref } : { projectId: project.id, name: ref },
    );
    if (!row) throw new AccountsError(`project ${project.name} has no MCP server "${ref}"`);
    await repo.update({ id: row.id, projectId: project.id }, { tools: checked });
    return view({ ...row, tools: checked });
  }

  /** Removes a server by id or name; the next run no longer offers its tools. */
  async remove(projectRef: string, ref: string): Promise<McpServerView> {
    const project = await this.accounts.findProject(projectRef);
    const repo = this.db.getRepository(McpServerEntity);
    const row = await repo.findOneBy(
      isUuid(ref) ? { projectId: project.id, id: ref } : { projectId: project.id, name: ref },
    );
    if (!row) throw new AccountsError(`project ${project.name} has no MCP server "${ref}"`);
    await repo.delete({ id: row.id, projectId: project.id });
    return view(row);
  }

  /** The project's servers with their headers decrypted. Call only where they are called (the tool activities). */
  async targets(projectId: string): Promise<McpServerTarget[]> {
    const rows = await this.db
      .getRepository(McpServerEntity)
      .find({ where: { projectId }, order: { createdAt: 'ASC', name: 'ASC' } });
    return rows.map((row) => ({
      name: row.name,
      url: row.url,
      headers:
        row.headerName && row.headerCiphertext
          ? {
              [row.headerName]: decryptSecret(
                row.headerCiphertext,
                masterKeys(this.config),
                secretContext(projectId, row.id),
              ),
            }
          : {},
      tools: row.tools,
    }));
  }
}

/** The header's ciphertext is bound to its project and server: copied to another row, it does not decrypt. */
const secretContext = (projectId: string, serverId: string): string => `${projectId}/mcp/${serverId}`;

function view(row: McpServerEntity): McpServerView {
  return {
    id: row.id,
    projectId: row.projectId,
    name: row.name,
    url: row.url,
    headerName: row.headerName,
    tools: row.tools,
    createdAt: row.createdAt,
  };
}

/** The allowed tool names, deduplicated and checked; null allows every tool the server lists. */
function checkTools(input: readonly string[] | null | undefined): string[] | null {
  const tools = input ? [...new Set(input)] : null;
  if (tools && tools.length === 0)
    throw new AccountsError('--tools names no tool (omit it to allow every tool the server lists)');
  if (tools && tools.length > MAX_MCP_TOOLS_PER_SERVER)
    throw new AccountsError(`at most ${MAX_MCP_TOOLS_PER_SERVER} tools may be allowed per server`);
  const badTools = (tools ?? []).filter((t) => !TOOL_NAME.test(t));
  if (badTools.length)
    throw new AccountsError(
      `invalid tool names: ${badTools.join(', ')} (letters, digits, "_" and "-", at most 64 characters)`,
    );
  return tools;
}

function parseServerUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AccountsError(`MCP server URL "${text}" is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new AccountsError('MCP server URL must be http or https');
  if (url.username || url.password)
    throw new AccountsError(
      'MCP server URL must not hold credentials: pass them with --header-from-env, which stores them encrypted',
    );
  if (url.href.length > 2048) throw new AccountsError('MCP server URL is longer than 2048 characters');
  return url;
}
