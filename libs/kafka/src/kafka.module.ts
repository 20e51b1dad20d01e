import { Module } from '@nestjs/common';
import { KafkaProbe } from './kafka.probe.js';

/** Kafka's readiness probe; producers and consumers come from createKafka. */
@Module({ providers: [KafkaProbe], exports: [KafkaProbe] })
export class KafkaModule {}
