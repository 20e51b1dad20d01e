import { Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { EventsModule, EventStore } from '#libs/events';
import { PersistenceModule } from '#libs/persistence';
import { MeteringService } from './metering.service.js';

@Module({
  imports: [PersistenceModule, EventsModule],
  providers: [{ provide: MeteringService, inject: [DataSource, EventStore], useFactory: (db: DataSource, events: EventStore) => new MeteringService(db, events) }],
  exports: [MeteringService],
})
export class MeteringModule {}
