import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { DataSource } from 'typeorm';
import {
  AccountsModule,
  AccountsService,
  Argon2idHasher,
  AuditLog,
  ConsoleAccountsService,
  linkMailer,
} from '#libs/accounts';
import { MAILER, MailModule, type Mailer } from '#libs/mail';
import { APP_CONFIG, ConfigModule, type AppConfig } from '#libs/config';
import { ConversationStore, PersistenceModule } from '#libs/persistence';
import { WebhooksModule } from '#libs/webhooks';
import { AuthController, COOKIE_NAMES } from './auth.controller.js';
import { ConsoleReads } from './console-reads.js';
import { HealthController } from './health.controller.js';
import { IntegrationsController } from './integrations.controller.js';
import { ProjectAccess } from './project-access.js';
import { ProjectController } from './project.controller.js';
import { Reveals } from './reveals.js';
import { StaticController } from './static.controller.js';
import { cookieNames } from './web/console-request.js';
import { ConsoleErrorFilter } from './web/error.filter.js';

@Module({
  imports: [ConfigModule, PersistenceModule, AccountsModule, WebhooksModule, MailModule],
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
      inject: [DataSource, APP_CONFIG, AccountsService, MAILER],
      useFactory: (db: DataSource, config: AppConfig, accounts: AccountsService, mailer: Mailer | null) =>
        new ConsoleAccountsService(db, config, accounts, new Argon2idHasher(), linkMailer(mailer)),
    },
    { provide: AuditLog, inject: [DataSource], useFactory: (db: DataSource) => new AuditLog(db) },
    ProjectAccess,
    Reveals,
    { provide: ConversationStore, inject: [DataSource], useFactory: (db: DataSource) => new ConversationStore(db) },
    { provide: ConsoleReads, inject: [DataSource], useFactory: (db: DataSource) => new ConsoleReads(db) },
  ],
})
export class ConsoleModule {}
