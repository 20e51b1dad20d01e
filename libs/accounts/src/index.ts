export { AccountsError, AccountsService, MODEL_PROVIDERS, type ModelConfigInput, type ModelConfigView, type ModelCredentials, type NewProject, type Principal, type RecentHits } from './accounts.service.js';
export { AccountsModule } from './accounts.module.js';
export { API_KEY_PREFIX, decryptSecret, encryptSecret } from './secrets.js';
export { McpServersService, MAX_MCP_SERVERS_PER_PROJECT, MAX_MCP_TOOLS_PER_SERVER, type McpServerView, type NewMcpServer } from './mcp-servers.service.js';
