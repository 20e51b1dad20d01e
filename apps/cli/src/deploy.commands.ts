import type { Connection } from '@temporalio/client';
import type { Command, Option } from 'commander';
import type { AppConfig } from '#libs/config';
import type { DeploymentState } from '#libs/temporal';
import { CliRefusal } from './refusal.js';

/** What the deploy commands use of the CLI around them (the configuration loaded when a command
 * runs, so `--help` needs no environment). */
export interface DeployCommandContext {
  readonly appConfig: () => Promise<AppConfig>;
  readonly print: (json: boolean, value: unknown, text: string) => void;
  readonly jsonOption: Option;
}

/** Runs still open per build, by the search attribute Temporal keeps for versioned runs: a
 * draining build can be stopped once it has none. */
async function openRuns(
  connection: Connection,
  namespace: string,
  state: DeploymentState,
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const b of state.builds) {
    const query = `TemporalWorkerDeploymentVersion = '${state.name}:${b.buildId}' AND ExecutionStatus = 'Running'`;
    const { count } = await connection.workflowService.countWorkflowExecutions({ namespace, query });
    counts.set(b.buildId, Number(count ?? 0));
  }
  return counts;
}

function statusText(state: DeploymentState, runs: ReadonlyMap<string, number>): string {
  const lines = [`deployment ${state.name}: current build ${state.current ?? 'none'}`];
  for (const b of state.builds)
    lines.push(
      `  ${b.buildId}  ${b.status}  ${runs.get(b.buildId) ?? 0} open run(s)  created ${b.createdAt?.toISOString() ?? '-'}`,
    );
  return lines.join('\n');
}

/** `deploy status|promote`: the worker deployment of the task queue (Temporal Worker Versioning,
 * docs/operations.md "Deploying"). */
export function addDeployCommands(program: Command, ctx: DeployCommandContext): void {
  const { appConfig, print, jsonOption } = ctx;
  type Deployment = {
    connection: Connection;
    namespace: string;
    taskQueue: string;
    temporal: typeof import('#libs/temporal');
  };
  const withConnection = async <T>(fn: (d: Deployment) => Promise<T>): Promise<T> => {
    const config = await appConfig();
    const [{ Connection }, { requireTemporalAddress, temporalConnectionOptions }, temporal] = await Promise.all([
      import('@temporalio/client'),
      import('#libs/config'),
      import('#libs/temporal'),
    ]);
    const connection = await Connection.connect({
      address: requireTemporalAddress(config),
      ...temporalConnectionOptions(config.engines.temporal),
      connectTimeout: '5 seconds',
    });
    try {
      return await fn({
        connection,
        namespace: config.temporal.namespace,
        taskQueue: config.temporal.taskQueue,
        temporal,
      });
    } finally {
      await connection.close();
    }
  };
  const deploy = program
    .command('deploy')
    .description(
      'the worker deployment of the task queue (TEMPORAL_TASK_QUEUE): its builds, which one is current, and how far the others have drained',
    );
  deploy
    .command('status')
    .description(
      'the builds of the deployment, the current one, and how many open runs each still has (a draining build may be stopped at 0)',
    )
    .addOption(jsonOption)
    .action(async (o: { json?: boolean }) =>
      withConnection(async ({ connection, namespace, taskQueue, temporal: { describeDeployment } }) => {
        const state = await describeDeployment(connection.workflowService, namespace, taskQueue);
        if (!state)
          throw new CliRefusal(`no worker deployment ${taskQueue}: no versioned worker has polled the task queue yet`);
        const runs = await openRuns(connection, namespace, state);
        print(
          Boolean(o.json),
          {
            deployment: state.name,
            current: state.current ?? null,
            builds: state.builds.map((b) => ({
              build_id: b.buildId,
              status: b.status,
              open_runs: runs.get(b.buildId) ?? 0,
              created_at: b.createdAt?.toISOString() ?? null,
            })),
          },
          statusText(state, runs),
        );
      }),
    );
  deploy
    .command('promote')
    .description(
      'make a build current: new requests and sessions start on it, sessions, webhook deliveries and the reconciler move to it; requests stay on the build that started them. Rolling back is promoting the previous build',
    )
    .argument('<build-id>', 'a build that has polled the task queue (see deploy status)')
    .addOption(jsonOption)
    .action(async (buildId: string, o: { json?: boolean }) =>
      withConnection(async ({ connection, namespace, taskQueue, temporal: { describeDeployment, promoteBuild } }) => {
        const known = await describeDeployment(connection.workflowService, namespace, taskQueue);
        if (!known?.builds.some((b) => b.buildId === buildId))
          throw new CliRefusal(
            `build ${buildId} has not polled task queue ${taskQueue}: start its workers first (deploy status lists the builds)`,
          );
        const { promoted, previous } = await promoteBuild(connection.workflowService, namespace, taskQueue, buildId, {
          identity: 'mas deploy promote',
        });
        print(
          Boolean(o.json),
          { deployment: taskQueue, current: buildId, previous: previous ?? null, changed: promoted },
          promoted ? `${buildId} is current (was ${previous ?? 'none'})` : `${buildId} was already current`,
        );
      }),
    );
}
