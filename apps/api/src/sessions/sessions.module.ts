import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { EventsModule } from '#libs/events';
import { PersistenceModule } from '#libs/persistence';
import { TemporalClientModule } from '#libs/temporal';
import { IdempotencyKeys } from '../agent/idempotency.js';
import { CreateSessionHandler } from './commands/create-session.handler.js';
import { EndSessionHandler } from './commands/end-session.handler.js';
import { SendSessionMessageHandler } from './commands/send-session-message.handler.js';
import { GetSessionHandler } from './queries/get-session.handler.js';
import { ListSessionsHandler } from './queries/list-sessions.handler.js';
import { SessionsController } from './sessions.controller.js';
import { SessionsRepository } from './sessions.repository.js';
import { SseModule } from '../streaming/sse.module.js';

/** Sessions (issue 6): long-lived conversations, each a sessionWorkflow. */
@Module({
  imports: [CqrsModule, PersistenceModule, EventsModule, TemporalClientModule, SseModule],
  controllers: [SessionsController],
  providers: [
    { provide: IdempotencyKeys, inject: [DataSource], useFactory: (db: DataSource) => new IdempotencyKeys(db) },
    SessionsRepository, CreateSessionHandler, SendSessionMessageHandler, EndSessionHandler, GetSessionHandler, ListSessionsHandler],
})
export class SessionsModule {}
