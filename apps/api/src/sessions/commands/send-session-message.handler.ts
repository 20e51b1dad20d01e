import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { sendSessionMessageUpdate, ServiceError, sessionWorkflowId, type InputFileRef, type SessionMessage } from '#libs/contracts';
import { BlobStore } from '#libs/persistence';
import { TemporalClientService } from '#libs/temporal';
import { resolveCapabilities } from '../../agent/agent-request.validation.js';
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
    const plan = this.config.plans[project.plan];
    const capabilities = resolveCapabilities(body.capabilities, plan.name, plan.capabilities, project.capabilities, body.tools.length > 0);
    const client = this.temporal.client;
    const connection = this.temporal.connection;
    if (!client || !connection) throw new ServiceError('service_unavailable', 'The compute service is not configured (no Temporal address).');

    // Claim check: input files are stored once; the workflows carry only their ids.
    const files: InputFileRef[] = [];
    for (const file of body.files) {
      const { id, bytes } = await this.blobs.put(project.id, file.name, file.content);
      files.push({ name: file.name, blobId: id, bytes });
    }
    const surcharges = this.config.capabilitySurcharges;
    const pickupMs = this.config.temporal.pickupTimeoutMs;
    const message: SessionMessage = {
      requestId,
      projectId: project.id,
      plan: project.plan,
      message: body.message,
      capabilities,
      capabilitiesRequested: body.capabilities !== undefined,
      tools: body.tools,
      files,
      maxCredits: 1 + capabilities.reduce((sum, c) => sum + surcharges[c], 0),
      surcharges,
      monthlyQuota: plan.monthlyQuota,
      stream: body.stream,
      // Past this moment the caller has been told compute_unavailable: the session must refuse it.
      acceptBy: Date.now() + pickupMs,
    };
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
