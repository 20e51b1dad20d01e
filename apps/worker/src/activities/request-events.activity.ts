import type { DataSource } from 'typeorm';
import type { AgentActivities } from '#libs/contracts';
import type { RequestStream } from '#libs/events';

/** Domain events of agent requests that move no money (stops are recorded by libs/metering,
 * together with their settlement and usage event), through the request stream's appender. */
export class RequestEventsActivities {
  constructor(
    private readonly db: DataSource,
    private readonly requests: RequestStream,
  ) {}

  readonly recordToolOutputs: AgentActivities['recordToolOutputs'] = async (input) => {
    await this.db.transaction((tx) =>
      this.requests.toolOutputsSubmitted(tx, input.projectId, {
        requestId: input.requestId,
        stop: input.stop,
        toolCallIds: input.toolCallIds,
      }),
    );
  };
}
