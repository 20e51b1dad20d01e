import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { EventsModule } from '#libs/events';
import { PersistenceModule } from '#libs/persistence';
import { TemporalClientModule } from '#libs/temporal';
import { RunsModule } from '../runs/runs.module.js';
import { CreateSessionHandler } from './commands/create-session.handler.js';
import { EndSessionHandler } from './commands/end-session.handler.js';
import { SendSessionMessageHandler } from './commands/send-session-message.handler.js';
import { GetSessionHandler } from './queries/get-session.handler.js';
import { ListSessionsHandler } from './queries/list-sessions.handler.js';
import { SessionsController } from './sessions.controller.js';
import { SessionsRepository } from './sessions.repository.js';

/** Sessions (issue 6): long-lived conversations, each a sessionWorkflow; a message is a run
 * through the run gateway (runs/). */
@Module({
  imports: [CqrsModule, PersistenceModule, EventsModule, TemporalClientModule, RunsModule],
  controllers: [SessionsController],
  providers: [
    SessionsRepository,
    CreateSessionHandler,
    SendSessionMessageHandler,
    EndSessionHandler,
    GetSessionHandler,
    ListSessionsHandler,
  ],
})
export class SessionsModule {}
