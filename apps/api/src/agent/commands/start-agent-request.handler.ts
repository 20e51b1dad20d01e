import { Inject, Injectable, Logger } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import {
  agentRequestWorkflowId,
  firstStopUpdate,
  SEARCH_ATTRIBUTES,
  ServiceError,
  stateQuery,
  type AgentRequestInput,
  type AgentStop,
} from '#libs/contracts';
import { BlobStore } from '#libs/persistence';
import { TemporalClientService } from '#libs/temporal';
import { requestInput } from '../request-input.js';
import { fromTemporalError, withinPickup } from '../temporal-errors.js';
import { StartAgentRequestCommand, StreamAgentRequestCommand, type StartedAgentRequest } from './start-agent-request.command.js';

/** Starts agentRequestWorkflow with Update-with-Start and returns once a worker has taken it up. */
@Injectable()
export class AgentRequestStarter {
  private readonly logger = new Logger('agent');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly temporal: TemporalClientService,
    private readonly blobs: BlobStore,
  ) {}

  async start({ principal, body, requestId, history }: StartAgentRequestCommand | StreamAgentRequestCommand): Promise<StartedAgentRequest> {
    const { project } = principal;
    const input: AgentRequestInput = { ...(await requestInput(this.config, this.blobs, principal, body, requestId)), history };
    const { capabilities } = input;
    const client = this.temporal.client;
    if (!client) throw new ServiceError('service_unavailable', 'The compute service is not configured (no Temporal address).');
    const startWorkflowOperation = new WithStartWorkflowOperation('agentRequestWorkflow', {
      workflowId: agentRequestWorkflowId(requestId),
      taskQueue: this.config.temporal.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      workflowExecutionTimeout: '24 hours',
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.projectId, value: project.id },
        { key: SEARCH_ATTRIBUTES.agentStatus, value: 'in_progress' },
        { key: SEARCH_ATTRIBUTES.capabilities, value: [...capabilities] },
      ],
    });
    const connection = this.temporal.connection!;
    const pickupMs = this.config.temporal.pickupTimeoutMs;
    let handle;
    try {
      // One round trip starts the workflow and registers the Update.
      handle = await withinPickup(connection, pickupMs, () =>
        client.workflow.startUpdateWithStart(firstStopUpdate, { startWorkflowOperation, waitForStage: 'ACCEPTED' }),
      );
    } catch (e) {
      const error = fromTemporalError(e, 'compute_unavailable');
      if (error.code === 'compute_unavailable') {
        // Do not let a request that nobody picked up run later behind the caller's back. Not
        // awaited: the caller's answer must not wait on a Temporal that may be unreachable.
        void connection
          .withDeadline(Date.now() + 10_000, () => client.workflow.getHandle(agentRequestWorkflowId(requestId)).terminate('no worker picked the request up in time'))
          .catch(() => undefined);
        this.logger.warn(`request ${requestId}: ${e instanceof Error ? e.message : String(e)}`);
        throw new ServiceError('compute_unavailable', `No agent worker took the request up within ${pickupMs / 1000} seconds, or the compute service could not be reached.`);
      }
      throw error;
    }
    const accepted = handle;
    return {
      requestId,
      firstStop: async () => {
        try {
          return await accepted.result();
        } catch (e) {
          throw fromTemporalError(e, 'compute_unavailable');
        }
      },
    };
  }
}

@CommandHandler(StartAgentRequestCommand)
export class StartAgentRequestHandler implements ICommandHandler<StartAgentRequestCommand> {
  constructor(
    private readonly starter: AgentRequestStarter,
    private readonly temporal: TemporalClientService,
  ) {}

  async execute(command: StartAgentRequestCommand): Promise<AgentStop> {
    if (command.attach) {
      const attached = await this.attach(command.requestId);
      if (attached) return attached;
    }
    return (await this.starter.start(command)).firstStop();
  }

  /** The first stop of a request that may already run (an Idempotency-Key replay); undefined if it never started. */
  private async attach(requestId: string): Promise<AgentStop | undefined> {
    const client = this.temporal.client;
    if (!client) throw new ServiceError('service_unavailable', 'The compute service is not configured (no Temporal address).');
    const handle = client.workflow.getHandle(agentRequestWorkflowId(requestId));
    try {
      return await handle.executeUpdate(firstStopUpdate);
    } catch (e) {
      // Finished already: its result is its last stop. Never started: start it now.
      if (e instanceof WorkflowNotFoundError) return undefined;
      try {
        return await handle.query(stateQuery);
      } catch (inner) {
        if (inner instanceof WorkflowNotFoundError) return undefined;
        throw fromTemporalError(inner, 'compute_unavailable');
      }
    }
  }
}

@CommandHandler(StreamAgentRequestCommand)
export class StreamAgentRequestHandler implements ICommandHandler<StreamAgentRequestCommand> {
  constructor(private readonly starter: AgentRequestStarter) {}

  execute(command: StreamAgentRequestCommand): Promise<StartedAgentRequest> {
    return this.starter.start(command);
  }
}
