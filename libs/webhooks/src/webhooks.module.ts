import { Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { PersistenceModule } from '#libs/persistence';
import { WebhookStore } from './webhook-store.js';

@Module({
  imports: [PersistenceModule],
  providers: [
    {
      provide: WebhookStore,
      inject: [DataSource, APP_CONFIG],
      useFactory: (db: DataSource, config: AppConfig) => new WebhookStore(db, config),
    },
  ],
  exports: [WebhookStore],
})
export class WebhooksModule {}
