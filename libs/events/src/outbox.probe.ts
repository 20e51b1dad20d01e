import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ProbeFailure, type ReadinessProbe } from '#libs/health';

/** Unsent outbox rows older than this mean the relay is stuck or Kafka is unreachable. */
export const OUTBOX_LAG_LIMIT_S = 60;

/** The age of the oldest unsent outbox row (what a stuck relay looks like from outside). */
export async function oldestUnsentAgeSeconds(db: DataSource): Promise<number> {
  const rows: { age: number | null }[] = await db.query(
    `select extract(epoch from now() - min(created_at))::float8 as age from outbox where published_at is null`,
  );
  return rows[0]?.age ?? 0;
}

/** /readyz's `outbox` component: down while the oldest unsent row is older than a minute. Not
 * critical: the api keeps taking requests (their events wait in the outbox, never vanish). */
@Injectable()
export class OutboxProbe implements ReadinessProbe {
  readonly name = 'outbox';
  readonly critical = false;

  constructor(private readonly db: DataSource) {}

  async check(): Promise<void> {
    const age = await oldestUnsentAgeSeconds(this.db);
    if (age > OUTBOX_LAG_LIMIT_S)
      throw new ProbeFailure(
        `the oldest unsent outbox row is ${Math.round(age)} s old: the relay is stuck or Kafka is unreachable`,
      );
  }
}
