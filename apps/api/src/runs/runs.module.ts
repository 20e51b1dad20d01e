import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { EventsModule } from '#libs/events';
import { MeteringModule } from '#libs/metering';
import { PersistenceModule } from '#libs/persistence';
import { RequestReadModel } from '#libs/read-models';
import { TemporalClientModule } from '#libs/temporal';
import { SseModule } from '../streaming/sse.module.js';
import { IdempotencyKeys } from './idempotency.js';
import { GetAgentRequestHandler } from './queries/get-agent-request.handler.js';
import { RunGate } from './run-gate.js';
import { RunGateway } from './run-gateway.js';

/** The run gateway (run-gateway.ts), with the one RunGate of this api process and the
 * Idempotency-Keys behind it, and what the endpoints over it (agent/, sessions/) also read: a
 * request's state (GetAgentRequestQuery, RequestReadModel) and the SSE responder. */
@Module({
  imports: [CqrsModule, PersistenceModule, EventsModule, MeteringModule, TemporalClientModule, SseModule],
  providers: [
    { provide: IdempotencyKeys, inject: [DataSource], useFactory: (db: DataSource) => new IdempotencyKeys(db) },
    {
      provide: RunGate,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => new RunGate(config.runs.maxInFlight, config.runs.maxWaitMs),
    },
    RunGateway,
    GetAgentRequestHandler,
    RequestReadModel,
  ],
  exports: [RunGateway, RequestReadModel, SseModule],
})
export class RunsModule {}
