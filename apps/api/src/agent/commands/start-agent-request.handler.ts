import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { RunGateway, type StartedRun } from '../../runs/run-gateway.js';
import { StartAgentRequestCommand } from './start-agent-request.command.js';

@CommandHandler(StartAgentRequestCommand)
export class StartAgentRequestHandler implements ICommandHandler<StartAgentRequestCommand> {
  constructor(private readonly runs: RunGateway) {}

  execute({ principal, body, requestId }: StartAgentRequestCommand): Promise<StartedRun> {
    return this.runs.startAgentRequest(principal, body, requestId);
  }
}
