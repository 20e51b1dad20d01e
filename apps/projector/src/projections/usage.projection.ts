import type { EntityManager } from 'typeorm';
import { TOPICS, USAGE_EVENT_TYPE, type UsageEventData } from '#libs/contracts';
import type { CloudEvent } from '#libs/events';
import type { Projection } from './projection.js';

/** Usage per project per billing period: requests, credits and tokens, and requests by capability. */
export const usageProjection: Projection = {
  name: 'usage',
  topic: TOPICS.usage,
  tables: ['usage_totals', 'usage_by_capability'],
  async apply(tx: EntityManager, event: CloudEvent<Record<string, unknown>>): Promise<void> {
    if (event.type !== USAGE_EVENT_TYPE) return;
    const u = event.data as unknown as UsageEventData;
    const requests = u.kind === 'initial' ? 1 : 0;
    await tx.query(
      `insert into usage_totals (project_id, period_start, requests, credits, input_tokens, output_tokens) values ($1, $2, $3, $4, $5, $6)
       on conflict (project_id, period_start) do update set
         requests = usage_totals.requests + excluded.requests,
         credits = usage_totals.credits + excluded.credits,
         input_tokens = usage_totals.input_tokens + excluded.input_tokens,
         output_tokens = usage_totals.output_tokens + excluded.output_tokens`,
      [u.project_id, u.billing_period_start, requests, u.credits, u.input_tokens, u.output_tokens],
    );
    if (requests === 0) return;
    for (const capability of u.capabilities) {
      await tx.query(
        `insert into usage_by_capability (project_id, period_start, capability, requests) values ($1, $2, $3, 1)
         on conflict (project_id, period_start, capability) do update set requests = usage_by_capability.requests + 1`,
        [u.project_id, u.billing_period_start, capability],
      );
    }
  },
};
