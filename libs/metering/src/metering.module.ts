import { Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { EventsModule, EventStore, RequestStream } from '#libs/events';
import { PersistenceModule } from '#libs/persistence';
import { MeteringService } from './metering.service.js';

@Module({
  imports: [PersistenceModule, EventsModule],
  providers: [
    {
      provide: MeteringService,
      inject: [DataSource, EventStore, RequestStream],
      useFactory: (db: DataSource, events: EventStore, requests: RequestStream) =>
        new MeteringService(db, events, requests),
    },
  ],
  exports: [MeteringService],
})
export class MeteringModule {}
