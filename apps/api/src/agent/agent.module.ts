import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { PersistenceModule } from '#libs/persistence';
import { TemporalClientModule } from '#libs/temporal';
import { AgentController } from './agent.controller.js';
import { StartAgentRequestHandler } from './commands/start-agent-request.handler.js';
import { SubmitToolOutputsHandler } from './commands/submit-tool-outputs.handler.js';
import { GetAgentRequestHandler } from './queries/get-agent-request.handler.js';

@Module({
  imports: [CqrsModule, PersistenceModule, TemporalClientModule],
  controllers: [AgentController],
  providers: [StartAgentRequestHandler, SubmitToolOutputsHandler, GetAgentRequestHandler],
})
export class AgentModule {}
