import type { INestApplicationContext } from '@nestjs/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { APP_CONFIG, requireTemporalAddress, type AppConfig } from '#libs/config';
import type { AgentActivities } from '#libs/contracts';
import { BuiltinToolActivities } from './activities/builtin-tools.activity.js';
import { MeteringActivities } from './activities/metering.activity.js';
import { ModelCallActivity } from './activities/model-call.activity.js';
import { workflowBundleOptions } from './workflow-bundle.js';

/** The activities of the agent task queue, bound from the Nest container. */
export function agentActivities(app: INestApplicationContext): AgentActivities {
  const metering = app.get(MeteringActivities);
  const model = app.get(ModelCallActivity);
  const tools = app.get(BuiltinToolActivities);
  return {
    admitRequest: metering.admitRequest,
    settleCredits: metering.settleCredits,
    callModel: model.callModel,
    builtinTools: tools.builtinTools,
    runBuiltinTool: tools.runBuiltinTool,
  };
}

/** The Temporal worker of the agent task queue. */
export async function createAgentWorker(app: INestApplicationContext): Promise<{ worker: Worker; connection: NativeConnection }> {
  const config = app.get<AppConfig>(APP_CONFIG);
  const connection = await NativeConnection.connect({ address: requireTemporalAddress(config) });
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    ...workflowBundleOptions(),
    activities: agentActivities(app),
  });
  return { worker, connection };
}
