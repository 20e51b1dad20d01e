// The floor of a Temporal-per-request service (issue 16): an Update-with-Start answered by a
// workflow that runs one local activity and returns. Nothing of the service is in it.
import { allHandlersFinished, condition, defineUpdate, proxyLocalActivities, setHandler } from '@temporalio/workflow';

export const answer = defineUpdate('answer');
const { echo } = proxyLocalActivities({ startToCloseTimeout: '10 seconds' });

export async function floorWorkflow(input) {
  let result;
  setHandler(answer, async () => {
    await condition(() => result !== undefined);
    return result;
  });
  result = await echo(input);
  await condition(allHandlersFinished);
  return result;
}
