// The floor's worker: its own process and task queue on the stack's Temporal server, without the
// service worker's payload codec and interceptors, with its task-queue polls. Logs "polling" when it polls.
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
  // As many polls on the task queue as on the sticky queue, as the service's worker has
  // (apps/worker/src/worker.ts): with the SDK's 1:5 a request now and then waited about 2 s for
  // its first workflow task (once in each of three runs of 100 at 1 client, and in every bench run:
  // the floor's p99 of 2 s, the stalls of its 8-client window); with 1:1, none in 1500 (docs/performance.md).
  nonStickyToStickyPollRatio: 1,
});
process.on('SIGTERM', () => worker.shutdown());
console.log(`floor worker polling ${FLOOR_TASK_QUEUE}`);
await worker.run();
await connection.close();
