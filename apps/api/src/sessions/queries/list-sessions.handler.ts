import { QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { ServiceError } from '#libs/contracts';
import type { SessionRecord } from '#libs/resources';
import { SessionsRepository } from '../sessions.repository.js';
import { ListSessionsQuery } from './list-sessions.query.js';

@QueryHandler(ListSessionsQuery)
export class ListSessionsHandler implements IQueryHandler<ListSessionsQuery> {
  constructor(private readonly sessions: SessionsRepository) {}

  async execute({ principal, params }: ListSessionsQuery): Promise<{ records: SessionRecord[]; hasMore: boolean }> {
    const projectId = principal.project.id;
    // A cursor that is no session of this project is an unknown id (404), like one in a path.
    if (params.after && !(await this.sessions.find(projectId, params.after))) {
      throw new ServiceError(
        'session_not_found',
        'The cursor is no session of this project: pass the `next_cursor` of the previous page.',
      );
    }
    return this.sessions.list(projectId, params);
  }
}
