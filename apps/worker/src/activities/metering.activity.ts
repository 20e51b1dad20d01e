import type { AgentActivities } from '#libs/contracts';
import type { MeteringService } from '#libs/metering';

/** The money steps of an agent request, each one transaction of libs/metering and idempotent by
 * request id (local activities: short database steps). */
export class MeteringActivities {
  constructor(private readonly metering: MeteringService) {}

  readonly recordStop: AgentActivities['recordStop'] = (input) => this.metering.recordStop(input);

  readonly releaseReservation: AgentActivities['releaseReservation'] = async (input) => {
    await this.metering.release({ ...input, reason: 'release' });
  };
}
