import { Accounts1763700000001 } from './1763700000001-accounts.js';
import { Metering1763700000002 } from './1763700000002-metering.js';
import { Files1763700000003 } from './1763700000003-files.js';
import { Sessions1763700000004 } from './1763700000004-sessions.js';
import { Events1763700000005 } from './1763700000005-events.js';
import { StreamEvents1763700000006 } from './1763700000006-stream-events.js';
import { Idempotency1763700000007 } from './1763700000007-idempotency.js';
import { IdempotencyExtended1763700000008 } from './1763700000008-idempotency-extended.js';
import { LedgerSettlement1763700000009 } from './1763700000009-ledger-settlement.js';
import { EventSourced1763700000010 } from './1763700000010-event-sourced.js';
import { Conversations1763700000011 } from './1763700000011-conversations.js';
import { LedgerChecked1763700000013 } from './1763700000013-ledger-checked.js';
import { Webhooks1763700000014 } from './1763700000014-webhooks.js';
import { McpServers1763700000015 } from './1763700000015-mcp-servers.js';
import { ModelProviders1763700000017 } from './1763700000017-model-providers.js';
import { RateLimitFunction1763700000018 } from './1763700000018-rate-limit-function.js';
import { FewerRoundTrips1763700000019 } from './1763700000019-fewer-round-trips.js';
import { ModelAnswers1763700000020 } from './1763700000020-model-answers.js';
import { BillingAnchor1763700000021 } from './1763700000021-billing-anchor.js';
import { StateScale1763700000030 } from './1763700000030-state-scale.js';
import { StateScaleIndexes1763700000031 } from './1763700000031-state-scale-indexes.js';
import { Console1763700000040 } from './1763700000040-console.js';
import { StreamNotify1763700000045 } from './1763700000045-stream-notify.js';
import { CredentialNotify1763700000048 } from './1763700000048-credential-notify.js';
import { WebhookResend1763700000050 } from './1763700000050-webhook-resend.js';
import { SessionEndRequests1763700000051 } from './1763700000051-session-end-requests.js';
import { AdmissionInApi1763700000052 } from './1763700000052-admission-in-api.js';
import { SessionSlot1763700000053 } from './1763700000053-session-slot.js';
import { BlobCompression1763700000054 } from './1763700000054-blob-compression.js';
import { ConsoleRoles1763700000055 } from './1763700000055-console-roles.js';
import { HostileTenantLimits1763700000056 } from './1763700000056-hostile-tenant-limits.js';
import { ConsoleReveals1763700000057 } from './1763700000057-console-reveals.js';

/** Every migration, in the order they apply. */
export const MIGRATIONS: readonly Function[] = [
  Accounts1763700000001,
  Metering1763700000002,
  Files1763700000003,
  Sessions1763700000004,
  Events1763700000005,
  StreamEvents1763700000006,
  Idempotency1763700000007,
  IdempotencyExtended1763700000008,
  LedgerSettlement1763700000009,
  EventSourced1763700000010,
  Conversations1763700000011,
  LedgerChecked1763700000013,
  Webhooks1763700000014,
  McpServers1763700000015,
  ModelProviders1763700000017,
  RateLimitFunction1763700000018,
  FewerRoundTrips1763700000019,
  ModelAnswers1763700000020,
  BillingAnchor1763700000021,
  StateScale1763700000030,
  StateScaleIndexes1763700000031,
  Console1763700000040,
  StreamNotify1763700000045,
  CredentialNotify1763700000048,
  WebhookResend1763700000050,
  SessionEndRequests1763700000051,
  AdmissionInApi1763700000052,
  SessionSlot1763700000053,
  BlobCompression1763700000054,
  ConsoleRoles1763700000055,
  HostileTenantLimits1763700000056,
  ConsoleReveals1763700000057,
];
