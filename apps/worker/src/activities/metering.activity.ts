import type { AgentActivities } from '#libs/contracts';
import type { MeteringService } from '#libs/metering';

/** Admission and settlement, both idempotent by request id (local activities: short DB steps). */
export class MeteringActivities {
  constructor(private readonly metering: MeteringService) {}

  readonly admitRequest: AgentActivities['admitRequest'] = (input) => this.metering.admit(input);

  readonly settleCredits: AgentActivities['settleCredits'] = async (input) => {
    const { balance } = await this.metering.settle(input);
    return { balance };
  };
}
