import { Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { EventsModule, EventStore } from '#libs/events';
import { PersistenceModule, PgListener } from '#libs/persistence';
import { AccountsService } from './accounts.service.js';
import { McpServersService } from './mcp-servers.service.js';

@Module({
  imports: [PersistenceModule, EventsModule],
  providers: [
    {
      provide: AccountsService,
      inject: [DataSource, APP_CONFIG, EventStore, PgListener],
      // The apps' caches hear the process's one listener.
      useFactory: (db: DataSource, config: AppConfig, events: EventStore, listener: PgListener) =>
        new AccountsService(db, config, events, listener),
    },
    {
      provide: McpServersService,
      inject: [DataSource, APP_CONFIG, AccountsService],
      useFactory: (db: DataSource, config: AppConfig, accounts: AccountsService) =>
        new McpServersService(db, config, accounts),
    },
  ],
  exports: [AccountsService, McpServersService],
})
export class AccountsModule {}
