// The floor's client: one Update-with-Start per call, waiting for the Update's result, as the
// api does for POST /v1/agent. Returns results shaped like the HTTP ones of lib/http.mjs.
import { randomUUID } from 'node:crypto';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { now } from '../lib/http.mjs';

export async function openFloorClient({ address, namespace, taskQueue }) {
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  return {
    async call() {
      const startedAt = now();
      const workflowId = `bench-floor-${randomUUID()}`;
      const startWorkflowOperation = new WithStartWorkflowOperation('floorWorkflow', {
        workflowId,
        taskQueue,
        args: [{ message: 'Say something short.' }],
        workflowIdConflictPolicy: 'FAIL',
      });
      try {
        await client.workflow.executeUpdateWithStart('answer', { startWorkflowOperation });
        const endedAt = now();
        return { status: 200, ms: endedAt - startedAt, startedAt, endedAt };
      } catch (e) {
        const endedAt = now();
        return { status: 0, error: String(e?.message ?? e).slice(0, 120), ms: endedAt - startedAt, startedAt, endedAt };
      }
    },
    close: () => connection.close(),
  };
}
