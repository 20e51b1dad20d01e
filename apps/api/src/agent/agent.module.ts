import { Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { CqrsModule } from '@nestjs/cqrs';
import { EventsModule } from '#libs/events';
import { PersistenceModule } from '#libs/persistence';
import { TemporalClientModule } from '#libs/temporal';
import { AgentController } from './agent.controller.js';
import { CancelController } from './cancel.controller.js';
import { CancelAgentRequestHandler } from './commands/cancel-agent-request.handler.js';
import { RunGate } from './run-gate.js';
import { AgentRequestStarter, StartAgentRequestHandler, StreamAgentRequestHandler } from './commands/start-agent-request.handler.js';
import { IdempotencyKeys } from './idempotency.js';
import { SubmitToolOutputsHandler } from './commands/submit-tool-outputs.handler.js';
import { GetAgentRequestHandler } from './queries/get-agent-request.handler.js';
import { RequestReadModel } from '#libs/read-models';
import { SseModule } from '../streaming/sse.module.js';

@Module({
  imports: [CqrsModule, PersistenceModule, EventsModule, TemporalClientModule, SseModule],
  controllers: [AgentController, CancelController],
  providers: [
    { provide: IdempotencyKeys, inject: [DataSource], useFactory: (db: DataSource) => new IdempotencyKeys(db) },
    { provide: RunGate, inject: [APP_CONFIG], useFactory: (config: AppConfig) => new RunGate(config.runs.maxInFlight, config.runs.maxWaitMs) },
    AgentRequestStarter, StartAgentRequestHandler, StreamAgentRequestHandler, SubmitToolOutputsHandler, CancelAgentRequestHandler, GetAgentRequestHandler, RequestReadModel],
})
export class AgentModule {}
