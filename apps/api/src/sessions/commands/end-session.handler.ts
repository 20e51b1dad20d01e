import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { endSessionUpdate, ServiceError, sessionWorkflowId, type SessionView } from '#libs/contracts';
import { TemporalClientService } from '#libs/temporal';
import { closedSessionError, sessionNotFound, UUID } from '../session-resource.js';
import { sessionCallError, withinPickup } from '../session-temporal.js';
import { SessionsRepository } from '../sessions.repository.js';
import { EndSessionCommand } from './end-session.command.js';

@CommandHandler(EndSessionCommand)
export class EndSessionHandler implements ICommandHandler<EndSessionCommand> {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly temporal: TemporalClientService,
    private readonly sessions: SessionsRepository,
  ) {}

  async execute({ principal, sessionId }: EndSessionCommand): Promise<SessionView> {
    const projectId = principal.project.id;
    const record = UUID.test(sessionId) ? await this.sessions.find(projectId, sessionId) : undefined;
    if (!record) throw sessionNotFound();
    const closed = closedSessionError(record.status);
    if (closed) throw closed;
    const client = this.temporal.client;
    const connection = this.temporal.connection;
    if (!client || !connection) throw new ServiceError('service_unavailable', 'The compute service is not configured (no Temporal address).');
    try {
      const handle = client.workflow.getHandle(sessionWorkflowId(sessionId));
      const update = await withinPickup(connection, this.config.temporal.pickupTimeoutMs, () =>
        handle.startUpdate(endSessionUpdate, { args: [{ projectId }], waitForStage: 'ACCEPTED' }),
      );
      // The reply comes once the read model says `ended`: the session no longer counts towards the limit.
      return await update.result();
    } catch (e) {
      throw await sessionCallError(e, this.sessions, projectId, sessionId);
    }
  }
}
