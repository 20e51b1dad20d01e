export {
  AccountsError,
  AccountsService,
  MODEL_PROVIDERS,
  type ModelConfigInput,
  type ModelConfigView,
  type ModelCredentials,
  type NewProject,
  type Principal,
  type RecentHits,
} from './accounts.service.js';
export { AccountsModule } from './accounts.module.js';
export { API_KEY_PREFIX, decryptSecret, encryptSecret, masterKeys } from './secrets.js';
export { reencryptSecrets, type ReencryptReport } from './secret-rotation.js';
export {
  McpServersService,
  MAX_MCP_SERVERS_PER_PROJECT,
  MAX_MCP_TOOLS_PER_SERVER,
  type McpServerView,
  type NewMcpServer,
} from './mcp-servers.service.js';
export {
  CONSOLE_LIMITS,
  CONSOLE_ROLES,
  ConsoleAccountsService,
  normaliseEmail,
  roleAllows,
  signInDelayMs,
  type InvitationResult,
  type LinkMail,
  type LinkMailer,
  type LinkView,
  type ConsoleMember,
  type ConsoleMembership,
  type ConsoleRole,
  type ConsoleSession,
  type ConsoleSessionView,
  type SignInResult,
} from './console-accounts.service.js';
export { ARGON2ID_PARAMETERS, Argon2idHasher, type PasswordHasher } from './password-hasher.js';
export { AUDIT_PAGE_SIZE, AuditLog, type AuditActor, type AuditEntry } from './audit-log.js';
