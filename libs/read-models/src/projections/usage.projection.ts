import type { EntityManager } from 'typeorm';
import { TOPICS, USAGE_EVENT_TYPE, type UsageEventData } from '#libs/contracts';
import type { CloudEvent } from '#libs/events';
import { tableName, type Projection, type TableNames } from './projection.js';

/** Usage per project per billing period: requests, credits and tokens, and requests by capability. */
export const usageProjection: Projection = {
  name: 'usage',
  topic: TOPICS.usage,
  tables: ['usage_totals', 'usage_by_capability'],
  // Usage events are not domain events: they live on Kafka (and 7 days in the outbox), not in `events`.
  fromEventStore: false,
  accepts: (event) => event.type === USAGE_EVENT_TYPE,
  async apply(tx: EntityManager, event: CloudEvent<Record<string, unknown>>, tables?: TableNames): Promise<void> {
    const totals = tableName(tables, 'usage_totals');
    const byCapability = tableName(tables, 'usage_by_capability');
    if (!usageProjection.accepts(event)) return;
    const u = event.data as unknown as UsageEventData;
    const requests = u.kind === 'initial' ? 1 : 0;
    await tx.query(
      `insert into ${totals} (project_id, period_start, requests, credits, input_tokens, output_tokens) values ($1, $2, $3, $4, $5, $6)
       on conflict (project_id, period_start) do update set
         requests = ${totals}.requests + excluded.requests,
         credits = ${totals}.credits + excluded.credits,
         input_tokens = ${totals}.input_tokens + excluded.input_tokens,
         output_tokens = ${totals}.output_tokens + excluded.output_tokens`,
      [u.project_id, u.billing_period_start, requests, u.credits, u.input_tokens, u.output_tokens],
    );
    if (requests === 0) return;
    for (const capability of u.capabilities) {
      await tx.query(
        `insert into ${byCapability} (project_id, period_start, capability, requests) values ($1, $2, $3, 1)
         on conflict (project_id, period_start, capability) do update set requests = ${byCapability}.requests + 1`,
        [u.project_id, u.billing_period_start, capability],
      );
    }
  },
};
