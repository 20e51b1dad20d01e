import { Logger } from '@nestjs/common';
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { AppConfig } from '#libs/config';
import { ledgerReconcilerScheduleId } from '#libs/contracts';

/** Creates the Temporal Schedule that runs ledgerReconcilerWorkflow every
 * RECONCILER_INTERVAL_SECONDS on this task queue, unless it exists (every worker replica calls
 * this; the first one creates it). Operators see, pause and trigger it in the Temporal UI. */
export async function ensureReconcilerSchedule(client: Client, config: AppConfig): Promise<void> {
  const seconds = config.reconcilerIntervalSeconds;
  if (seconds === 0) return;
  const { taskQueue } = config.temporal;
  const scheduleId = ledgerReconcilerScheduleId(taskQueue);
  try {
    await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: `${seconds} seconds` }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'ledgerReconcilerWorkflow',
        workflowId: `ledger-reconciler-${taskQueue}`,
        taskQueue,
        args: [{}],
        workflowExecutionTimeout: '10 minutes',
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
    });
    new Logger('reconciler').log(`created the schedule ${scheduleId} (every ${seconds} s)`);
  } catch (e) {
    if (!(e instanceof ScheduleAlreadyRunning)) throw e;
  }
}
