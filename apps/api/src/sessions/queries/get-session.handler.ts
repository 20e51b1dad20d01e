import { QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { sessionNotFound, UUID } from '../session-resource.js';
import type { SessionRecord } from '#libs/resources';
import { SessionsRepository } from '../sessions.repository.js';
import { GetSessionQuery } from './get-session.query.js';

@QueryHandler(GetSessionQuery)
export class GetSessionHandler implements IQueryHandler<GetSessionQuery> {
  constructor(private readonly sessions: SessionsRepository) {}

  async execute({ principal, sessionId }: GetSessionQuery): Promise<SessionRecord> {
    const record = UUID.test(sessionId) ? await this.sessions.find(principal.project.id, sessionId) : undefined;
    if (!record) throw sessionNotFound();
    return record;
  }
}
