import { Query } from '@nestjs/cqrs';
import type { Principal } from '#libs/accounts';
import type { ListParams } from '../session-resource.js';
import type { SessionRecord } from '#libs/resources';

/** A page of the principal's project's sessions, newest first. */
export class ListSessionsQuery extends Query<{ records: SessionRecord[]; hasMore: boolean }> {
  constructor(
    readonly principal: Principal,
    readonly params: ListParams,
  ) {
    super();
  }
}
