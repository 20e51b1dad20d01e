import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { endSessionUpdate, sessionWorkflowId, type SessionView } from '#libs/contracts';
import { TemporalClientService } from '#libs/temporal';
import { closedSessionError, sessionNotFound, UUID } from '../session-resource.js';
import { awaitAnswer, requireTemporal } from '../../runs/temporal-errors.js';
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
    const { client, connection } = requireTemporal(this.temporal);
    try {
      const handle = client.workflow.getHandle(sessionWorkflowId(sessionId));
      const pickupMs = this.config.temporal.pickupTimeoutMs;
      const update = await withinPickup(connection, pickupMs, () =>
        handle.startUpdate(endSessionUpdate, { args: [{ projectId }], waitForStage: 'ACCEPTED' }),
      );
      // The reply comes once the session's end is recorded (its slot is free); bounded like every
      // wait of the api, while a worker makes progress on it.
      return await awaitAnswer(
        { connection, client, describe: async () => (await handle.describe()).raw },
        pickupMs,
        () => update.result(),
      );
    } catch (e) {
      throw await sessionCallError(e, this.sessions, projectId, sessionId);
    }
  }
}
