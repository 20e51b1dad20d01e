import { Module } from '@nestjs/common';
import { OutboxProbe } from '#libs/events';
import { READINESS_PROBES, type ReadinessProbe } from '#libs/health';
import { KafkaModule, KafkaProbe } from '#libs/kafka';
import { PersistenceModule, PostgresProbe } from '#libs/persistence';
import { TemporalClientModule, TemporalProbe } from '#libs/temporal';
import { HealthController } from './health.controller.js';

@Module({
  imports: [PersistenceModule, KafkaModule, TemporalClientModule],
  controllers: [HealthController],
  providers: [
    OutboxProbe,
    {
      provide: READINESS_PROBES,
      inject: [PostgresProbe, KafkaProbe, TemporalProbe, OutboxProbe],
      useFactory: (...probes: ReadinessProbe[]): readonly ReadinessProbe[] => probes,
    },
  ],
})
export class HealthModule {}
