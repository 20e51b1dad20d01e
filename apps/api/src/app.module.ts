import { Module } from '@nestjs/common';
import { ConfigModule } from '#libs/config';
import { HealthModule } from './health/health.module.js';

@Module({
  imports: [ConfigModule, HealthModule],
})
export class ApiModule {}
