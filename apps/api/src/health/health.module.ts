import { Module } from '@nestjs/common';
import { READINESS_PROBES, type ReadinessProbe } from '#libs/health';
import { KafkaModule, KafkaProbe } from '#libs/kafka';
import { PersistenceModule, PostgresProbe } from '#libs/persistence';
import { TemporalClientModule, TemporalProbe } from '#libs/temporal';
import { HealthController } from './health.controller.js';

@Module({
  imports: [PersistenceModule, KafkaModule, TemporalClientModule],
  controllers: [HealthController],
  providers: [
    {
      provide: READINESS_PROBES,
      inject: [PostgresProbe, KafkaProbe, TemporalProbe],
      useFactory: (...probes: ReadinessProbe[]): readonly ReadinessProbe[] => probes,
    },
  ],
})
export class HealthModule {}
