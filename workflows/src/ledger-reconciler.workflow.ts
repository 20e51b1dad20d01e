import { proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import type { ReconcilerActivities, ReconcilerReport } from '#libs/contracts';
import { whenVersioned } from './versioning.js';

const { reconcile } = proxyActivities<ReconcilerActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
});

/**
 * One pass of the money reconciler, started by the Temporal Schedule `ledger-reconciler-<task
 * queue>` (visible in the Temporal UI with each run's report as its result): reservations whose
 * workflow closed without settling are released (`ledger.reconciled.v1`), and sessions whose
 * workflow closed while still `active` give their slot back (`session.reconciled.v1`).
 */
export async function ledgerReconcilerWorkflow(
  input: { readonly graceSeconds?: number } = {},
): Promise<ReconcilerReport> {
  return reconcile({ graceSeconds: input.graceSeconds ?? 60 });
}

// Worker Versioning: moves to the current build at its next workflow task (changes behind patched()).
setWorkflowOptions(whenVersioned('AUTO_UPGRADE'), ledgerReconcilerWorkflow);
