import { QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { SessionRecord } from '#libs/resources';
import { SessionsRepository } from '../sessions.repository.js';
import { sessionNotFound } from '../session-resource.js';
import { ListSessionsQuery } from './list-sessions.query.js';

@QueryHandler(ListSessionsQuery)
export class ListSessionsHandler implements IQueryHandler<ListSessionsQuery> {
  constructor(private readonly sessions: SessionsRepository) {}

  async execute({ principal, params }: ListSessionsQuery): Promise<{ records: SessionRecord[]; hasMore: boolean }> {
    const projectId = principal.project.id;
    // A cursor that is no session of this project is an unknown id (404), like one in a path.
    if (params.after && !(await this.sessions.find(projectId, params.after))) throw sessionNotFound();
    return this.sessions.list(projectId, params);
  }
}
