import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { PersistenceModule } from '#libs/persistence';
import { TemporalClientModule } from '#libs/temporal';
import { RunsModule } from '../runs/runs.module.js';
import { AgentController } from './agent.controller.js';
import { CancelController } from './cancel.controller.js';
import { CancelAgentRequestHandler } from './commands/cancel-agent-request.handler.js';
import { StartAgentRequestHandler } from './commands/start-agent-request.handler.js';
import { SubmitToolOutputsHandler } from './commands/submit-tool-outputs.handler.js';

/** `/v1/agent`: one-shot requests, their tool outputs, events and cancellation, over the run gateway. */
@Module({
  imports: [CqrsModule, PersistenceModule, TemporalClientModule, RunsModule],
  controllers: [AgentController, CancelController],
  providers: [StartAgentRequestHandler, SubmitToolOutputsHandler, CancelAgentRequestHandler],
})
export class AgentModule {}
