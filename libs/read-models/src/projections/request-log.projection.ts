import type { EntityManager } from 'typeorm';
import { TOPICS } from '#libs/contracts';
import {
  evolveRequest,
  fromCloudEvent,
  READ_MODEL_EXPIRED,
  READ_MODEL_RETENTION_MS,
  requestStateFromRow,
  type CloudEvent,
  type RequestRow,
  type RequestState,
} from '#libs/events';
import { tableName, type Projection, type TableNames } from './projection.js';

/** One row per agent request: the fold of its stream (evolveRequest in libs/events), with the
 * stream version it reflects. The content of its stops is not here: it never travels on Kafka. */
export const requestLogProjection: Projection = {
  name: 'request-log',
  topic: TOPICS.events,
  tables: ['request_log'],
  fromEventStore: true,
  rebuild: {
    table: 'request_log',
    streamPrefix: 'agent-request-',
    expired: READ_MODEL_EXPIRED.request_log,
    windowDays: READ_MODEL_RETENTION_MS / 86_400_000,
    row: (events) => {
      const s = events.reduce<RequestState | undefined>((state, e) => evolveRequest(state, e), undefined);
      return (
        s && {
          request_id: s.requestId,
          project_id: s.projectId,
          session_id: s.sessionId,
          status: s.status,
          stop: s.stop,
          capabilities: s.capabilitiesUsed,
          credits: s.credits,
          leg_credits: s.legCredits,
          tokens: s.tokens,
          leg_tokens: s.legTokens,
          credits_remaining: s.creditsRemaining,
          requests_used: s.requestsUsed,
          error_code: s.errorCode,
          created_at: s.createdAt,
          updated_at: s.updatedAt,
          version: s.version,
        }
      );
    },
  },
  accepts: (event) => typeof event.subject === 'string' && event.subject.startsWith('agent-request-'),
  async apply(tx: EntityManager, event: CloudEvent<Record<string, unknown>>, tables?: TableNames): Promise<void> {
    const domain = fromCloudEvent(event);
    if (!domain || !requestLogProjection.accepts(event)) return;
    const table = tableName(tables, 'request_log');
    const rows: RequestRow[] = await tx.query(`select * from ${table} where request_id = $1 for update`, [
      String(domain.data.requestId),
    ]);
    const before = rows[0] && requestStateFromRow(rows[0]);
    const s = evolveRequest(before, domain);
    if (!s || s === before) return;
    await tx.query(
      `insert into ${table} (request_id, project_id, session_id, status, stop, capabilities, credits, leg_credits, tokens, leg_tokens, credits_remaining, requests_used, error_code, created_at, updated_at, version)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
       on conflict (request_id) do update set
         session_id = excluded.session_id, status = excluded.status, stop = excluded.stop, capabilities = excluded.capabilities,
         credits = excluded.credits, leg_credits = excluded.leg_credits, tokens = excluded.tokens, leg_tokens = excluded.leg_tokens,
         credits_remaining = excluded.credits_remaining, requests_used = excluded.requests_used, error_code = excluded.error_code,
         updated_at = excluded.updated_at, version = excluded.version`,
      [
        s.requestId,
        s.projectId,
        s.sessionId,
        s.status,
        s.stop,
        s.capabilitiesUsed,
        s.credits,
        s.legCredits,
        s.tokens,
        s.legTokens,
        s.creditsRemaining,
        s.requestsUsed,
        s.errorCode,
        s.createdAt,
        s.updatedAt,
        s.version,
      ],
    );
  },
};
