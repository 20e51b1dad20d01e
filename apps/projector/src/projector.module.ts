import { Module } from '@nestjs/common';
import { ConfigModule } from '#libs/config';
import { PersistenceModule } from '#libs/persistence';

/** The projector's providers: the read-model projections and their consumer groups. */
@Module({
  imports: [ConfigModule, PersistenceModule],
})
export class ProjectorModule {}
