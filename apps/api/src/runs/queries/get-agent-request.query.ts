import { Query } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { AgentStop } from '#libs/contracts';

/** The latest state of a request of the principal's project. */
export class GetAgentRequestQuery extends Query<AgentStop> {
  constructor(
    readonly principal: Principal,
    readonly requestId: string,
  ) {
    super();
  }
}
