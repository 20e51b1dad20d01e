import { Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { AccountsModule } from '#libs/accounts';
import { ConfigModule } from '#libs/config';
import { MeteringModule } from '#libs/metering';
import { PersistenceModule } from '#libs/persistence';
import { AgentModule } from './agent/agent.module.js';
import { ApiKeyGuard } from './auth/api-key.guard.js';
import { ApiKeyMiddleware } from './auth/api-key.middleware.js';
import { CodecAccess } from './codec/codec-access.js';
import { CodecController } from './codec/codec.controller.js';
import { ContractExceptionFilter } from './errors/contract-exception.filter.js';
import { ErrorDocsController } from './errors/error-docs.controller.js';
import { FilesController } from './files/files.controller.js';
import { HealthModule } from './health/health.module.js';
import { SessionsModule } from './sessions/sessions.module.js';

@Module({
  imports: [ConfigModule, PersistenceModule, AccountsModule, MeteringModule, HealthModule, AgentModule, SessionsModule],
  controllers: [ErrorDocsController, FilesController, CodecController],
  providers: [
    { provide: APP_FILTER, useClass: ContractExceptionFilter },
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    ApiKeyMiddleware,
    CodecAccess,
  ],
})
export class ApiModule {}
