import type { Client } from '@temporalio/client';
import { ledgerReconcilerScheduleId } from '#libs/contracts';

/**
 * Clears what a throwaway task queue (a benchmark's, a drill's) leaves on a shared
 * Temporal server once its workers are gone: its open workflows, whose timers (session expiries,
 * tool-output waits, webhook retries) would otherwise keep firing for hours with no worker, and its
 * reconciler schedule. The stack's server had gathered 5,800 such workflows and 52 schedules, and
 * spent a quarter of a core on them at idle (docs/performance.md). Bounded; a workflow visibility
 * does not list yet stays. Returns how many workflows were terminated.
 */
export async function clearTaskQueue(client: Client, taskQueue: string, reason: string, max = 2000): Promise<number> {
  let terminated = 0;
  try {
    for await (const wf of client.workflow.list({
      query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'`,
    })) {
      if (terminated >= max) break;
      await client.workflow
        .getHandle(wf.workflowId, wf.runId)
        .terminate(reason)
        .catch(() => undefined);
      terminated++;
    }
  } catch {
    // Visibility may lag or be unavailable; the workflows then time out on their own.
  }
  await client.schedule
    .getHandle(ledgerReconcilerScheduleId(taskQueue))
    .delete()
    .catch(() => undefined);
  return terminated;
}
