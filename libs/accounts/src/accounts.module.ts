import { Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { PersistenceModule } from '#libs/persistence';
import { AccountsService } from './accounts.service.js';

@Module({
  imports: [PersistenceModule],
  providers: [
    {
      provide: AccountsService,
      inject: [DataSource, APP_CONFIG],
      useFactory: (db: DataSource, config: AppConfig) => new AccountsService(db, config),
    },
  ],
  exports: [AccountsService],
})
export class AccountsModule {}
