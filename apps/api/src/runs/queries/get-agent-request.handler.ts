import { QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { WorkflowNotFoundError } from '@temporalio/common';
import { agentRequestWorkflowId, ServiceError, stateQuery, type AgentStop, isUuid } from '#libs/contracts';
import { TemporalClientService } from '#libs/temporal';
import { failingMessage, failingWorkflowTask, fromTemporalError, reportFailing } from '../temporal-errors.js';
import { GetAgentRequestQuery } from './get-agent-request.query.js';
import { RequestReadModel } from '#libs/read-models';

/** The longest a GET of a running request waits for Temporal to say whether its task is failing. */
const FAILING_CHECK_MS = 1_000;

@QueryHandler(GetAgentRequestQuery)
export class GetAgentRequestHandler implements IQueryHandler<GetAgentRequestQuery> {
  constructor(
    private readonly requests: RequestReadModel,
    private readonly temporal: TemporalClientService,
  ) {}

  async execute({ principal, requestId }: GetAgentRequestQuery): Promise<AgentStop> {
    const notFound = new ServiceError('request_not_found', 'No request with this id exists in this project.');
    if (!isUuid(requestId)) throw notFound;
    const stop = (await this.requests.find(requestId)) ?? (await this.beforeAdmission(requestId));
    if (!stop || stop.projectId !== principal.project.id) throw notFound;
    return stop.status === 'in_progress' || stop.status === 'requires_tool_outputs' ? this.withFailingTask(stop) : stop;
  }

  /** A run that cannot make progress because its workflow task keeps failing keeps its status (the
   * contract has no status for it) and shows why in `error` (docs/decisions.md). Best effort and
   * bounded: without Temporal, GET answers from the read model as before. */
  private async withFailingTask(stop: AgentStop): Promise<AgentStop> {
    const client = this.temporal.client;
    if (!client) return stop;
    const workflowId = agentRequestWorkflowId(stop.requestId);
    try {
      const failing = await client.connection.withDeadline(Date.now() + FAILING_CHECK_MS, async () =>
        failingWorkflowTask(client, (await client.workflow.getHandle(workflowId).describe()).raw),
      );
      if (!failing) return stop;
      reportFailing(workflowId, failing);
      return { ...stop, error: { code: 'compute_unavailable', message: failingMessage(failing) } };
    } catch {
      return stop;
    }
  }

  /** A request with no event yet has just started and not been admitted: only its workflow knows it
   * (it shows `in_progress`). Once it has events, the read model answers. */
  private async beforeAdmission(requestId: string): Promise<AgentStop | undefined> {
    const client = this.temporal.client;
    if (!client) return undefined;
    try {
      return await client.workflow.getHandle(agentRequestWorkflowId(requestId)).query(stateQuery);
    } catch (e) {
      if (e instanceof WorkflowNotFoundError) return undefined;
      const error = fromTemporalError(e, 'request_not_found');
      if (error.code === 'request_not_found') return undefined;
      throw error;
    }
  }
}
