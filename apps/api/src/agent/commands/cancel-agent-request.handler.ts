import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { WorkflowFailedError } from '@temporalio/client';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { agentRequestWorkflowId, ServiceError, type AgentStop } from '#libs/contracts';
import { TemporalClientService } from '#libs/temporal';
import { awaitAnswer, fromTemporalError, requireTemporal, withinPickup } from '../../runs/temporal-errors.js';
import { CancelAgentRequestCommand } from './cancel-agent-request.command.js';

/** 409 request_not_cancellable: the request has finished (or finishes before the cancellation reaches it). */
export const notCancellable = (): ServiceError =>
  new ServiceError(
    'request_not_cancellable',
    'The request has finished: only a request that is running or waiting for tool outputs can be cancelled.',
  );

/**
 * Cancels the request's workflow through Temporal cancellation (never termination): the workflow
 * aborts its model call, records the cancelled stop (which settles the reservation by what ran)
 * and returns it. A workflow that has closed, or that records its last stop before the
 * cancellation reaches it, leaves the request as it finished: 409 request_not_cancellable.
 * The caller has checked that the request exists in the project.
 */
@CommandHandler(CancelAgentRequestCommand)
export class CancelAgentRequestHandler implements ICommandHandler<CancelAgentRequestCommand> {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly temporal: TemporalClientService,
  ) {}

  async execute({ principal, requestId }: CancelAgentRequestCommand): Promise<AgentStop> {
    const { client, connection } = requireTemporal(this.temporal);
    const pickupMs = this.config.temporal.pickupTimeoutMs;
    const handle = client.workflow.getHandle(agentRequestWorkflowId(requestId));
    let stop: AgentStop;
    try {
      await withinPickup(connection, pickupMs, () => handle.cancel());
      stop = await awaitAnswer(
        { connection, client, describe: async () => (await handle.describe()).raw },
        pickupMs,
        () => handle.result(),
      );
    } catch (e) {
      // A workflow that ended cancelled or failed without its stop has nothing to show: its last
      // recorded stop is read with GET.
      if (e instanceof WorkflowFailedError) throw notCancellable();
      const error = fromTemporalError(e, 'request_not_cancellable');
      throw error.code === 'request_not_cancellable' ? notCancellable() : error;
    }
    if (stop.projectId !== principal.project.id)
      throw new ServiceError('request_not_found', 'No request with this id exists in this project.');
    if (stop.status !== 'cancelled') throw notCancellable();
    return stop;
  }
}
