import { QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { agentRequestWorkflowId, ServiceError, stateQuery, type AgentStop, isUuid } from '#libs/contracts';
import { TemporalClientService } from '#libs/temporal';
import { fromTemporalError } from '../temporal-errors.js';
import { GetAgentRequestQuery } from './get-agent-request.query.js';


@QueryHandler(GetAgentRequestQuery)
export class GetAgentRequestHandler implements IQueryHandler<GetAgentRequestQuery> {
  constructor(private readonly temporal: TemporalClientService) {}

  async execute({ principal, requestId }: GetAgentRequestQuery): Promise<AgentStop> {
    const notFound = new ServiceError('request_not_found', 'No request with this id exists in this project.');
    if (!isUuid(requestId)) throw notFound;
    const client = this.temporal.client;
    if (!client) throw new ServiceError('service_unavailable', 'The compute service is not configured (no Temporal address).');
    let stop: AgentStop;
    try {
      stop = await client.workflow.getHandle(agentRequestWorkflowId(requestId)).query(stateQuery);
    } catch (e) {
      throw fromTemporalError(e, 'request_not_found');
    }
    if (stop.projectId !== principal.project.id) throw notFound;
    return stop;
  }
}
