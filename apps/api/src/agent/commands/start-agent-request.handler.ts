import { Inject, Logger } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import {
  agentRequestWorkflowId,
  firstStopUpdate,
  SEARCH_ATTRIBUTES,
  ServiceError,
  type AgentRequestInput,
  type AgentStop,
  type InputFileRef,
} from '#libs/contracts';
import { BlobStore } from '#libs/persistence';
import { TemporalClientService } from '#libs/temporal';
import { resolveCapabilities } from '../agent-request.validation.js';
import { fromTemporalError } from '../temporal-errors.js';
import { StartAgentRequestCommand } from './start-agent-request.command.js';

@CommandHandler(StartAgentRequestCommand)
export class StartAgentRequestHandler implements ICommandHandler<StartAgentRequestCommand> {
  private readonly logger = new Logger('agent');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly temporal: TemporalClientService,
    private readonly blobs: BlobStore,
  ) {}

  async execute({ principal, body, requestId, history }: StartAgentRequestCommand): Promise<AgentStop> {
    const { project } = principal;
    const plan = this.config.plans[project.plan];
    const capabilities = resolveCapabilities(body.capabilities, plan.name, plan.capabilities, project.capabilities, body.tools.length > 0);
    const client = this.temporal.client;
    if (!client) throw new ServiceError('service_unavailable', 'The compute service is not configured (no Temporal address).');

    // Claim check: input files are stored once; the workflow carries only their ids.
    const files: InputFileRef[] = [];
    for (const file of body.files) {
      const { id, bytes } = await this.blobs.put(project.id, file.name, file.content);
      files.push({ name: file.name, blobId: id, bytes });
    }
    const surcharges = this.config.capabilitySurcharges;
    const input: AgentRequestInput = {
      requestId,
      projectId: project.id,
      plan: project.plan,
      message: body.message,
      history,
      capabilities,
      capabilitiesRequested: body.capabilities !== undefined,
      tools: body.tools,
      files,
      maxCredits: 1 + capabilities.reduce((sum, c) => sum + surcharges[c], 0),
      surcharges,
      monthlyQuota: plan.monthlyQuota,
      stream: body.stream,
    };
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
      // One round trip starts the workflow and registers the Update. Bounded as a whole (the
      // connection phase included), so a missing worker or an unreachable Temporal becomes
      // compute_unavailable instead of a hang.
      const abort = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          reject(new ServiceError('compute_unavailable', 'pickup timeout'));
          abort.abort();
        }, pickupMs);
      });
      try {
        handle = await Promise.race([
          connection.withAbortSignal(abort.signal, () =>
            connection.withDeadline(Date.now() + pickupMs, () =>
              client.workflow.startUpdateWithStart(firstStopUpdate, { startWorkflowOperation, waitForStage: 'ACCEPTED' }),
            ),
          ),
          timeout,
        ]);
      } finally {
        clearTimeout(timer);
      }
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
    try {
      return await handle.result();
    } catch (e) {
      throw fromTemporalError(e, 'compute_unavailable');
    }
  }
}
