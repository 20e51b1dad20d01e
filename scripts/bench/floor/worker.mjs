// The floor's worker: its own process and task queue on the stack's Temporal server, with the
// service worker's defaults (no payload codec, no interceptors). Logs "polling" when it polls.
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';

const { TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE = 'default', FLOOR_TASK_QUEUE } = process.env;
const connection = await NativeConnection.connect({ address: TEMPORAL_ADDRESS });
const worker = await Worker.create({
  connection,
  namespace: TEMPORAL_NAMESPACE,
  taskQueue: FLOOR_TASK_QUEUE,
  workflowsPath: fileURLToPath(new URL('./workflow.mjs', import.meta.url)),
  activities: { echo: async (input) => input },
});
process.on('SIGTERM', () => worker.shutdown());
console.log(`floor worker polling ${FLOOR_TASK_QUEUE}`);
await worker.run();
await connection.close();
