import { Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AccountsModule, AccountsService } from '#libs/accounts';
import { ConfigModule } from '#libs/config';
import { MeteringModule, MeteringService } from '#libs/metering';
import { BlobStore, PersistenceModule } from '#libs/persistence';
import { BuiltinToolActivities } from './activities/builtin-tools.activity.js';
import { MeteringActivities } from './activities/metering.activity.js';
import { ModelCallActivity } from './activities/model-call.activity.js';

/** The worker's providers; createAgentWorker binds the activities from them. */
@Module({
  imports: [ConfigModule, PersistenceModule, AccountsModule, MeteringModule],
  providers: [
    { provide: ModelCallActivity, inject: [AccountsService, BlobStore], useFactory: (a: AccountsService, b: BlobStore) => new ModelCallActivity(a, b) },
    { provide: MeteringActivities, inject: [MeteringService], useFactory: (m: MeteringService) => new MeteringActivities(m) },
    { provide: BuiltinToolActivities, inject: [BlobStore, DataSource], useFactory: (b: BlobStore) => new BuiltinToolActivities(b) },
  ],
})
export class WorkerModule {}
