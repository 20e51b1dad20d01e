import { Query } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { SessionRecord } from '#libs/resources';

/** A session of the principal's project, from the read model. */
export class GetSessionQuery extends Query<SessionRecord> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
  ) {
    super();
  }
}
