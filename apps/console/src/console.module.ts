import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { AccountsModule, AccountsService, Argon2idHasher, AuditLog, ConsoleAccountsService } from '#libs/accounts';
import { APP_CONFIG, ConfigModule, type AppConfig } from '#libs/config';
import { ConversationStore, PersistenceModule } from '#libs/persistence';
import { WebhooksModule } from '#libs/webhooks';
import { AuthController, COOKIE_NAMES } from './auth.controller.js';
import { ConsoleReads } from './console-reads.js';
import { HealthController } from './health.controller.js';
import { IntegrationsController } from './integrations.controller.js';
import { ProjectAccess } from './project-access.js';
import { ProjectController } from './project.controller.js';
import { StaticController } from './static.controller.js';
import { cookieNames } from './web/console-request.js';
import { ConsoleErrorFilter } from './web/error.filter.js';

@Module({
  imports: [ConfigModule, PersistenceModule, AccountsModule, WebhooksModule],
  controllers: [HealthController, StaticController, AuthController, ProjectController, IntegrationsController],
  providers: [
    { provide: APP_FILTER, useClass: ConsoleErrorFilter },
    {
      provide: COOKIE_NAMES,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => cookieNames(config.console.publicUrl),
    },
    {
      provide: ConsoleAccountsService,
      inject: [DataSource, APP_CONFIG, AccountsService],
      useFactory: (db: DataSource, config: AppConfig, accounts: AccountsService) =>
        new ConsoleAccountsService(db, config, accounts, new Argon2idHasher()),
    },
    { provide: AuditLog, inject: [DataSource], useFactory: (db: DataSource) => new AuditLog(db) },
    ProjectAccess,
    { provide: ConversationStore, inject: [DataSource], useFactory: (db: DataSource) => new ConversationStore(db) },
    { provide: ConsoleReads, inject: [DataSource], useFactory: (db: DataSource) => new ConsoleReads(db) },
  ],
})
export class ConsoleModule {}
