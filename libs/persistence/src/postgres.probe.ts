import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { ReadinessProbe } from '#libs/health';

/** Answers when PostgreSQL runs a query through the service's pool. */
@Injectable()
export class PostgresProbe implements ReadinessProbe {
  readonly name = 'postgres';
  constructor(private readonly dataSource: DataSource) {}

  async check(): Promise<void> {
    await this.dataSource.query('select 1');
  }
}
