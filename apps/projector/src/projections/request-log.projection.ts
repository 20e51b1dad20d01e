import type { EntityManager } from 'typeorm';
import { EVENT_TYPES, TOPICS, type AgentRequestStopData } from '#libs/contracts';
import type { CloudEvent } from '#libs/events';
import type { Projection } from './projection.js';

const STOPS = new Set<string>([
  EVENT_TYPES.agentRequestToolCallsRequested,
  EVENT_TYPES.agentRequestCompleted,
  EVENT_TYPES.agentRequestFailed,
  EVENT_TYPES.agentRequestExpired,
]);

/** One row per agent request: its latest status, capabilities, credits and tokens. */
export const requestLogProjection: Projection = {
  name: 'request-log',
  topic: TOPICS.events,
  tables: ['request_log'],
  async apply(tx: EntityManager, event: CloudEvent<Record<string, unknown>>): Promise<void> {
    if (event.type === EVENT_TYPES.agentRequestAccepted) {
      await tx.query(
        `insert into request_log (request_id, project_id, status, created_at, updated_at) values ($1, $2, 'in_progress', $3, $3)
         on conflict (request_id) do nothing`,
        [event.data.requestId, event.projectid, event.time],
      );
      return;
    }
    if (!STOPS.has(event.type)) return;
    const d = event.data as unknown as AgentRequestStopData;
    await tx.query(
      `insert into request_log (request_id, project_id, session_id, status, capabilities, credits, tokens, error_code, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
       on conflict (request_id) do update set
         status = excluded.status,
         session_id = coalesce(excluded.session_id, request_log.session_id),
         capabilities = excluded.capabilities,
         credits = request_log.credits + excluded.credits,
         tokens = request_log.tokens + excluded.tokens,
         error_code = excluded.error_code,
         updated_at = excluded.updated_at`,
      [d.requestId, event.projectid, d.sessionId ?? null, d.status, d.capabilitiesUsed, d.creditsCharged, d.inputTokens + d.outputTokens, d.errorCode ?? null, event.time],
    );
  },
};
