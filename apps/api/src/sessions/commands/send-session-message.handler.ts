import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { sendSessionMessageUpdate, ServiceError, sessionWorkflowId, type SessionMessage } from '#libs/contracts';
import { BlobStore } from '#libs/persistence';
import { TemporalClientService } from '#libs/temporal';
import { requestInput } from '../../agent/request-input.js';
import { closedSessionError, sessionNotFound, UUID } from '../session-resource.js';
import { sessionCallError, withinPickup } from '../session-temporal.js';
import { SessionsRepository } from '../sessions.repository.js';
import { SendSessionMessageCommand, type AcceptedSessionMessage } from './send-session-message.command.js';

@CommandHandler(SendSessionMessageCommand)
export class SendSessionMessageHandler implements ICommandHandler<SendSessionMessageCommand> {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly temporal: TemporalClientService,
    private readonly blobs: BlobStore,
    private readonly sessions: SessionsRepository,
  ) {}

  async execute({ principal, sessionId, body, requestId }: SendSessionMessageCommand): Promise<AcceptedSessionMessage> {
    const { project } = principal;
    // 404 and 410 come after the body's 400 and before the capabilities' 403.
    const record = UUID.test(sessionId) ? await this.sessions.find(project.id, sessionId) : undefined;
    if (!record) throw sessionNotFound();
    const closed = closedSessionError(record.status);
    if (closed) throw closed;
    const input = await requestInput(this.config, this.blobs, principal, body, requestId);
    const client = this.temporal.client;
    const connection = this.temporal.connection;
    if (!client || !connection) throw new ServiceError('service_unavailable', 'The compute service is not configured (no Temporal address).');
    const pickupMs = this.config.temporal.pickupTimeoutMs;
    // Past this moment the caller has been told compute_unavailable: the session must refuse it.
    const message: SessionMessage = { ...input, acceptBy: Date.now() + pickupMs };
    const handle = client.workflow.getHandle(sessionWorkflowId(sessionId));
    let update;
    try {
      update = await withinPickup(connection, pickupMs, () =>
        handle.startUpdate(sendSessionMessageUpdate, { args: [message], updateId: requestId, waitForStage: 'ACCEPTED' }),
      );
    } catch (e) {
      throw await sessionCallError(e, this.sessions, project.id, sessionId);
    }
    const accepted = update;
    return {
      requestId,
      firstStop: async () => {
        try {
          return await accepted.result();
        } catch (e) {
          throw await sessionCallError(e, this.sessions, project.id, sessionId);
        }
      },
    };
  }
}
