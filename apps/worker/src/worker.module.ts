import { Module } from '@nestjs/common';
import { ConfigModule } from '#libs/config';
import { PersistenceModule } from '#libs/persistence';

/** The worker's providers; activities are bound from them in createAgentWorker. */
@Module({
  imports: [ConfigModule, PersistenceModule],
})
export class WorkerModule {}
