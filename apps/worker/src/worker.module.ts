import { Module } from '@nestjs/common';
import { AccountsModule, AccountsService } from '#libs/accounts';
import { ConfigModule } from '#libs/config';
import { MeteringModule, MeteringService } from '#libs/metering';
import { BlobStore, FileStore, PersistenceModule } from '#libs/persistence';
import { BuiltinToolActivities } from './activities/builtin-tools.activity.js';
import { MeteringActivities } from './activities/metering.activity.js';
import { ModelCallActivity } from './activities/model-call.activity.js';

/** The worker's providers; createAgentWorker binds the activities from them. */
@Module({
  imports: [ConfigModule, PersistenceModule, AccountsModule, MeteringModule],
  providers: [
    { provide: ModelCallActivity, inject: [AccountsService, BlobStore], useFactory: (a: AccountsService, b: BlobStore) => new ModelCallActivity(a, b) },
    { provide: MeteringActivities, inject: [MeteringService], useFactory: (m: MeteringService) => new MeteringActivities(m) },
    { provide: BuiltinToolActivities, inject: [BlobStore, FileStore], useFactory: (b: BlobStore, f: FileStore) => new BuiltinToolActivities(b, f) },
  ],
})
export class WorkerModule {}
