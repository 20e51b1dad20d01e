import type { DataSource } from 'typeorm';
import { EVENT_TYPES, TOPICS, USAGE_EVENT_TYPE, type AgentActivities, type AgentRequestStopData, type AgentStatus, type EventType, type UsageEventData } from '#libs/contracts';
import { deterministicUuid, EventStore, toCloudEvent } from '#libs/events';

const STOP_EVENT: Record<Exclude<AgentStatus, 'in_progress'>, EventType> = {
  requires_tool_outputs: EVENT_TYPES.agentRequestToolCallsRequested,
  completed: EVENT_TYPES.agentRequestCompleted,
  failed: EVENT_TYPES.agentRequestFailed,
  expired: EVENT_TYPES.agentRequestExpired,
};

/** Domain events of agent requests and their usage events, written through the outbox. */
export class RequestEventsActivities {
  private readonly events = new EventStore();

  constructor(private readonly db: DataSource) {}

  readonly recordStop: AgentActivities['recordStop'] = async (input) => {
    if (input.status === 'in_progress') return;
    const type = STOP_EVENT[input.status];
    const metadata = { projectId: input.projectId, correlationId: input.requestId, causationId: input.requestId };
    const data: AgentRequestStopData = {
      requestId: input.requestId,
      ...(input.sessionId ? { sessionId: input.sessionId } : {}),
      status: input.status,
      stop: input.stop,
      capabilitiesUsed: input.capabilitiesUsed,
      creditsCharged: input.creditsCharged,
      inputTokens: input.inputTokens,
      outputTokens: input.outputTokens,
      ...(input.errorCode ? { errorCode: input.errorCode } : {}),
    };
    await this.db.transaction(async (tx) => {
      const [event] = await this.events.append(tx, `agent-request-${input.requestId}`, 'any', [
        { eventId: deterministicUuid(input.requestId, input.stop, type), type, data: { ...data }, metadata },
      ]);
      if (!event || (input.creditsCharged === 0 && input.inputTokens + input.outputTokens === 0)) return;
      const rows: { period_start: Date }[] = await tx.query(`select period_start from projects where id = $1`, [input.projectId]);
      const usage: UsageEventData = {
        project_id: input.projectId,
        request_id: input.requestId,
        session_id: input.sessionId ?? null,
        kind: input.stop === 1 ? 'initial' : 'continuation',
        status: input.status,
        credits: input.creditsCharged,
        input_tokens: input.inputTokens,
        output_tokens: input.outputTokens,
        capabilities: input.capabilitiesUsed,
        plan: input.plan,
        billing_period_start: (rows[0]?.period_start ?? new Date(event.recordedAt)).toISOString(),
        occurred_at: event.recordedAt,
      };
      const usageId = deterministicUuid(input.requestId, input.stop, USAGE_EVENT_TYPE);
      await this.events.enqueue(
        tx,
        TOPICS.usage,
        input.projectId,
        usageId,
        toCloudEvent({ id: usageId, type: USAGE_EVENT_TYPE, subject: `agent-request-${input.requestId}`, time: new Date(event.recordedAt), data: usage, projectId: input.projectId, correlationId: input.requestId, causationId: event.eventId }),
      );
    });
  };

  readonly recordToolOutputs: AgentActivities['recordToolOutputs'] = async (input) => {
    const type = EVENT_TYPES.agentRequestToolOutputsSubmitted;
    await this.db.transaction(async (tx) => {
      await this.events.append(tx, `agent-request-${input.requestId}`, 'any', [
        {
          eventId: deterministicUuid(input.requestId, input.stop, type),
          type,
          data: { requestId: input.requestId, stop: input.stop, toolCallIds: [...input.toolCallIds] },
          metadata: { projectId: input.projectId, correlationId: input.requestId, causationId: input.requestId },
        },
      ]);
    });
  };
}
