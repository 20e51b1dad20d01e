import { Inject, Injectable, Logger } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError, type WorkflowUpdateHandle } from '@temporalio/client';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { agentRequestWorkflowId, firstStopUpdate, SEARCH_ATTRIBUTES, ServiceError, type AgentRequestInput, type AgentStop } from '#libs/contracts';
import { BlobStore } from '#libs/persistence';
import { TemporalClientService } from '#libs/temporal';
import { requestInput } from '../request-input.js';
import { RunGate } from '../run-gate.js';
import { awaitAnswer, fromTemporalError, WorkflowTaskFailingError } from '../temporal-errors.js';
import { StartAgentRequestCommand, StreamAgentRequestCommand, type StartedAgentRequest } from './start-agent-request.command.js';

/** The id of the Update that waits for a request's first stop. One id for every attempt: Temporal
 * keeps one outcome per Update id (also once the workflow has closed), so every duplicate of a
 * request gets the same first stop, and a closed request answers with it instead of running again. */
export const FIRST_STOP_UPDATE_ID = 'first-stop';

/**
 * Starts agentRequestWorkflow with Update-with-Start under the request's id, and returns once a
 * worker has taken it up. Temporal closes the races between duplicates (Idempotency-Key retries):
 * with `USE_EXISTING` a duplicate joins the running workflow, or starts the one that never started;
 * with `REJECT_DUPLICATE` a closed workflow's id is never used for a second run (its first-stop
 * Update answers instead). Nothing is terminated when no worker takes the request up in time: the
 * workflow carries `acceptBy` and fails at once, before admitting anything, if it starts later.
 */
const isUpdateHandle = (x: WorkflowUpdateHandle<AgentStop> | AgentStop): x is WorkflowUpdateHandle<AgentStop> => typeof (x as { result?: unknown }).result === 'function';

/** 503 for a run that found no room in this api within its wait: nothing was started or recorded. */
const atCapacity = (waitedMs: number): ServiceError =>
  new ServiceError('service_unavailable', `The service is at capacity: no run could start within ${waitedMs / 1000} seconds. Nothing was started or charged; retry after the number of seconds in Retry-After.`, { 'Retry-After': '1' });

@Injectable()
export class AgentRequestStarter {
  private readonly logger = new Logger('agent');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly temporal: TemporalClientService,
    private readonly blobs: BlobStore,
    private readonly gate: RunGate,
  ) {}

  /** Starts the run once this api has room for it (RunGate: it waits its turn, or gets 503 before
   * anything starts); the room is freed when its first stop is known. */
  async start(command: StartAgentRequestCommand | StreamAgentRequestCommand): Promise<StartedAgentRequest> {
    if (!this.temporal.client || !this.temporal.connection) throw new ServiceError('service_unavailable', 'The compute service is not configured (no Temporal address).');
    const release = await this.gate.enter(() => atCapacity(this.config.runs.maxWaitMs));
    try {
      const started = await this.startRun(command);
      const first = started.firstStop().finally(release);
      first.catch(() => undefined);
      return { requestId: started.requestId, firstStop: () => first };
    } catch (e) {
      release();
      throw e;
    }
  }

  private async startRun(command: StartAgentRequestCommand | StreamAgentRequestCommand): Promise<StartedAgentRequest> {
    const { principal, body, requestId } = command;
    const { project } = principal;
    const client = this.temporal.client!;
    const connection = this.temporal.connection!;
    const pickupMs = this.config.temporal.pickupTimeoutMs;
    const input: AgentRequestInput = { ...(await requestInput(this.config, this.blobs, principal, body, requestId)), acceptBy: Date.now() + pickupMs };
    const workflowId = agentRequestWorkflowId(requestId);
    const startWorkflowOperation = new WithStartWorkflowOperation('agentRequestWorkflow', {
      workflowId,
      taskQueue: this.config.temporal.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      workflowExecutionTimeout: '24 hours',
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.projectId, value: project.id },
        { key: SEARCH_ATTRIBUTES.agentStatus, value: 'in_progress' },
        { key: SEARCH_ATTRIBUTES.capabilities, value: [...input.capabilities] },
      ],
    });
    let handle: WorkflowUpdateHandle<AgentStop> | AgentStop;
    const run = { connection, client, describe: async () => (await client.workflow.getHandle(workflowId).describe()).raw };
    const update = { startWorkflowOperation, updateId: FIRST_STOP_UPDATE_ID };
    try {
      // One round trip starts (or joins) the workflow and registers (or joins) the Update. The
      // Update is accepted when the run's first workflow task completes, which (local activities)
      // is its first stop for a caller who waits for it: that caller gets the stop in the same round
      // trip. Bounded by a worker taking the task up, not by its length.
      handle = await awaitAnswer<WorkflowUpdateHandle<AgentStop> | AgentStop>(run, pickupMs, () =>
        command instanceof StartAgentRequestCommand
          ? client.workflow.executeUpdateWithStart(firstStopUpdate, update)
          : client.workflow.startUpdateWithStart(firstStopUpdate, { ...update, waitForStage: 'ACCEPTED' }),
      );
    } catch (e) {
      if (e instanceof WorkflowExecutionAlreadyStartedError) {
        // Closed without this Update (a request started before first-stop ids existed): its result is its last stop.
        return { requestId, firstStop: () => this.closedStop(workflowId) };
      }
      const error = fromTemporalError(e, 'compute_unavailable');
      if (error.code === 'compute_unavailable' && !(error instanceof WorkflowTaskFailingError)) {
        this.logger.warn(`request ${requestId}: ${e instanceof Error ? e.message : String(e)}`);
        throw new ServiceError(
          'compute_unavailable',
          `No agent worker took the request up within ${pickupMs / 1000} seconds, or the compute service could not be reached. A request that starts later fails at once without running; GET /v1/agent/{id} with the X-Request-Id shows its state, and a retry with the same Idempotency-Key joins it.`,
        );
      }
      throw error;
    }
    if (!isUpdateHandle(handle)) {
      const stop = handle;
      return { requestId, firstStop: () => Promise.resolve(stop) };
    }
    const accepted = handle;
    return {
      requestId,
      firstStop: async () => {
        try {
          // Bounded: as long as workers make progress on the run, not while none does.
          return await awaitAnswer(run, pickupMs, () => accepted.result());
        } catch (e) {
          throw fromTemporalError(e, 'compute_unavailable');
        }
      },
    };
  }

  private async closedStop(workflowId: string): Promise<AgentStop> {
    try {
      return (await this.temporal.client!.workflow.getHandle(workflowId).result()) as AgentStop;
    } catch (e) {
      throw fromTemporalError(e, 'compute_unavailable');
    }
  }
}

@CommandHandler(StartAgentRequestCommand)
export class StartAgentRequestHandler implements ICommandHandler<StartAgentRequestCommand> {
  constructor(private readonly starter: AgentRequestStarter) {}

  async execute(command: StartAgentRequestCommand): Promise<AgentStop> {
    return (await this.starter.start(command)).firstStop();
  }
}

@CommandHandler(StreamAgentRequestCommand)
export class StreamAgentRequestHandler implements ICommandHandler<StreamAgentRequestCommand> {
  constructor(private readonly starter: AgentRequestStarter) {}

  execute(command: StreamAgentRequestCommand): Promise<StartedAgentRequest> {
    return this.starter.start(command);
  }
}
