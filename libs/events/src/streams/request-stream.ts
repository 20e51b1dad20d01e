import type { EntityManager } from 'typeorm';
import {
  agentRequestStreamId,
  EVENT_TYPES,
  type AgentRequestAcceptedData,
  type AgentRequestStopData,
  type AgentRequestStopView,
  type AgentRequestToolOutputsData,
  type EventType,
  type StopRecord,
  type StoredEvent,
} from '#libs/contracts';
import { deterministicUuid } from '../deterministic-id.js';
import type { EventStore } from '../event-store.js';
import { fromStored } from './domain-event.js';
import { evolveRequest, type RequestState } from './request-state.js';
import type { SessionStream } from './session-stream.js';

const STOP_EVENT: Record<StopRecord['status'], EventType> = {
  requires_tool_outputs: EVENT_TYPES.agentRequestToolCallsRequested,
  completed: EVENT_TYPES.agentRequestCompleted,
  failed: EVENT_TYPES.agentRequestFailed,
  expired: EVENT_TYPES.agentRequestExpired,
  cancelled: EVENT_TYPES.agentRequestCancelled,
};

/**
 * The one appender of `agent-request-<id>` streams: every state change of a request is appended
 * here, in the caller's transaction (libs/metering's, for the steps that move money). A stop's
 * content (message, tool calls, files) goes to `request_views` in the same transaction; the event
 * carries ids and figures only, so Kafka never sees customer content.
 */
export class RequestStream {
  constructor(
    private readonly store: EventStore,
    private readonly sessions: SessionStream,
  ) {}

  /** Admission: the request's first event (a stream that exists already is a ConcurrencyError). */
  async accepted(tx: EntityManager, projectId: string, data: AgentRequestAcceptedData): Promise<void> {
    await this.store.append(tx, agentRequestStreamId(data.requestId), 0, [
      {
        eventId: deterministicUuid(data.requestId, EVENT_TYPES.agentRequestAccepted),
        type: EVENT_TYPES.agentRequestAccepted,
        data: { ...data },
        metadata: { projectId, correlationId: data.requestId, causationId: data.requestId },
      },
    ]);
  }

  /**
   * Claims stop `record.stop` of the request for this recording, in the caller's transaction: its
   * view row goes in first, and only one recording of a stop gets it. False when the stop was
   * recorded already (a re-run of the step, whatever outcome it brings): then nothing is written.
   */
  async claimStop(tx: EntityManager, record: StopRecord): Promise<boolean> {
    const claimed: unknown[] = await tx.query(
      `insert into request_views (request_id, stop, project_id, view) values ($1, $2, $3, $4) on conflict (request_id, stop) do nothing returning stop`,
      [record.requestId, record.stop, record.projectId, JSON.stringify(record.view ?? {})],
    );
    return claimed.length > 0;
  }

  /** A stop as it was first recorded: its event's figures and its view. */
  async recordedStop(
    tx: EntityManager,
    requestId: string,
    stop: number,
  ): Promise<(AgentRequestStopData & { view: AgentRequestStopView }) | undefined> {
    const rows: { data: AgentRequestStopData; view: AgentRequestStopView }[] = await tx.query(
      `select e.data, v.view from request_views v join events e on e.stream_id = $3 and e.type = any($4::text[]) and (e.data->>'stop')::int = v.stop
        where v.request_id = $1 and v.stop = $2 limit 1`,
      [requestId, stop, agentRequestStreamId(requestId), Object.values(STOP_EVENT)],
    );
    return rows[0] ? { ...rows[0].data, view: rows[0].view } : undefined;
  }

  /** A stop claimed by `claimStop`: its event and, for a session's request that paused, the
   * session's `message-paused`. The stored event. */
  async stop(tx: EntityManager, record: StopRecord, charged: number, balance: number): Promise<StoredEvent> {
    const type = STOP_EVENT[record.status];
    const data: AgentRequestStopData = {
      requestId: record.requestId,
      ...(record.sessionId ? { sessionId: record.sessionId } : {}),
      status: record.status,
      stop: record.stop,
      capabilitiesUsed: record.capabilitiesUsed,
      creditsCharged: charged,
      creditsRemaining: balance,
      inputTokens: record.inputTokens,
      outputTokens: record.outputTokens,
      ...(record.errorCode ? { errorCode: record.errorCode } : {}),
    };
    const [event] = await this.store.append(tx, agentRequestStreamId(record.requestId), 'any', [
      {
        eventId: deterministicUuid(record.requestId, record.stop, type),
        type,
        data: { ...data },
        metadata: { projectId: record.projectId, correlationId: record.requestId, causationId: record.requestId },
      },
    ]);
    if (!event)
      throw new Error(`stop ${record.stop} of request ${record.requestId} claimed, but its event was stored already`);
    if (record.sessionId && record.status === 'requires_tool_outputs') {
      await this.sessions.messagePaused(tx, {
        sessionId: record.sessionId,
        projectId: record.projectId,
        requestId: record.requestId,
        stop: record.stop,
      });
    }
    return event;
  }

  /** Tool outputs arrived for the stop `data.stop` (their ids only). */
  async toolOutputsSubmitted(tx: EntityManager, projectId: string, data: AgentRequestToolOutputsData): Promise<void> {
    const type = EVENT_TYPES.agentRequestToolOutputsSubmitted;
    await this.store.append(tx, agentRequestStreamId(data.requestId), 'any', [
      {
        eventId: deterministicUuid(data.requestId, data.stop, type),
        type,
        data: { requestId: data.requestId, stop: data.stop, toolCallIds: [...data.toolCallIds] },
        metadata: { projectId, correlationId: data.requestId, causationId: data.requestId },
      },
    ]);
  }

  /** The request folded from its stream in the event store (after `from`, when given). */
  async state(tx: EntityManager, requestId: string, from?: RequestState): Promise<RequestState | undefined> {
    const events = await this.store.readStream(tx, agentRequestStreamId(requestId), from?.version ?? 0);
    return events.map(fromStored).reduce<RequestState | undefined>(evolveRequest, from);
  }
}
