// The workflows of the agent task queue. Deterministic code only: this file and everything it
// imports is bundled by the Temporal SDK and runs in its sandbox.
export { agentRequestWorkflow } from './agent-request.workflow.js';
export { sessionWorkflow } from './session.workflow.js';
export { ledgerReconcilerWorkflow } from './ledger-reconciler.workflow.js';
export { webhookDeliveryWorkflow } from './webhook-delivery.workflow.js';
