import type { DataSource } from 'typeorm';
import { EVENT_TYPES, type AgentActivities } from '#libs/contracts';
import { deterministicUuid, type EventStore } from '#libs/events';

/** Domain events of agent requests that move no money (stops are recorded by libs/metering,
 * together with their settlement and usage event). */
export class RequestEventsActivities {
  constructor(
    private readonly db: DataSource,
    private readonly events: EventStore,
  ) {}

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
