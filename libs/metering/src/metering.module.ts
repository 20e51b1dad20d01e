import { Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { PersistenceModule } from '#libs/persistence';
import { MeteringService } from './metering.service.js';

@Module({
  imports: [PersistenceModule],
  providers: [{ provide: MeteringService, inject: [DataSource], useFactory: (db: DataSource) => new MeteringService(db) }],
  exports: [MeteringService],
})
export class MeteringModule {}
