import type { INestApplicationContext } from '@nestjs/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { workflowBundleOptions } from './workflow-bundle.js';

/** The Temporal worker of the agent task queue, with activities bound from the Nest container. */
export async function createAgentWorker(app: INestApplicationContext): Promise<{ worker: Worker; connection: NativeConnection }> {
  const config = app.get<AppConfig>(APP_CONFIG);
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    ...workflowBundleOptions(),
    activities: {},
  });
  return { worker, connection };
}
