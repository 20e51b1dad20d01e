import type { Connection } from '@temporalio/client';
import type { Command, Option } from 'commander';
import type { AppConfig } from '#libs/config';
import type { BuildRuns, DeploymentState } from '#libs/temporal';
import { CliRefusal } from './refusal.js';

/** What the deploy commands use of the CLI around them (the configuration loaded when a command
 * runs, so `--help` needs no environment). */
export interface DeployCommandContext {
  readonly appConfig: () => Promise<AppConfig>;
  readonly print: (json: boolean, value: unknown, text: string) => void;
  readonly jsonOption: Option;
}

/** One line per build: a build not current may be stopped once it has no pinned run left (its
 * auto-upgrading runs, idle sessions among them, move to the current build at their next task). */
function statusText(state: DeploymentState, runs: ReadonlyMap<string, BuildRuns>): string {
  const lines = [`deployment ${state.name}: current build ${state.current ?? 'none'}`];
  for (const b of state.builds) {
    const { pinned, moving } = runs.get(b.buildId) ?? { pinned: 0, moving: 0 };
    const stoppable = b.buildId !== state.current && pinned === 0 ? '  may stop' : '';
    lines.push(
      `  ${b.buildId}  ${b.status}  ${pinned} pinned run(s)  ${moving} run(s) that move on their next task  created ${b.createdAt?.toISOString() ?? '-'}${stoppable}`,
    );
  }
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
      'the builds of the deployment, the current one, and the open runs of each: pinned ones finish on it, the others move to the current build at their next task (a build not current may stop at 0 pinned runs)',
    )
    .addOption(jsonOption)
    .action(async (o: { json?: boolean }) =>
      withConnection(async ({ connection, namespace, taskQueue, temporal: { describeDeployment, runsByBuild } }) => {
        const state = await describeDeployment(connection.workflowService, namespace, taskQueue);
        if (!state)
          throw new CliRefusal(`no worker deployment ${taskQueue}: no versioned worker has polled the task queue yet`);
        const runs = await runsByBuild(connection.workflowService, namespace, state);
        print(
          Boolean(o.json),
          {
            deployment: state.name,
            current: state.current ?? null,
            builds: state.builds.map((b) => ({
              build_id: b.buildId,
              status: b.status,
              // Runs that finish on this build (requests; runs kept here by a rollback).
              open_runs: runs.get(b.buildId)?.pinned ?? 0,
              // Runs that move to the current build at their next task (sessions, deliveries).
              moving_runs: runs.get(b.buildId)?.moving ?? 0,
              may_stop: b.buildId !== state.current && (runs.get(b.buildId)?.pinned ?? 0) === 0,
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
      'make a build current: new requests and sessions start on it, sessions, webhook deliveries and the reconciler move to it; requests stay on the build that started them. Rolling back is promoting the previous build: sessions and deliveries that ran on a newer build then stay on it until they end',
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
        const { promoted, previous, keptOnNewer } = await promoteBuild(
          connection.workflowService,
          namespace,
          taskQueue,
          buildId,
          { identity: 'mas deploy promote' },
        );
        const kept = keptOnNewer
          ? `; ${keptOnNewer} session, delivery or reconciler run(s) that ran on a newer build stay on it until they end: keep its workers until deploy status says it may stop`
          : '';
        print(
          Boolean(o.json),
          {
            deployment: taskQueue,
            current: buildId,
            previous: previous ?? null,
            changed: promoted,
            kept_on_newer_builds: keptOnNewer,
          },
          promoted ? `${buildId} is current (was ${previous ?? 'none'})${kept}` : `${buildId} was already current`,
        );
      }),
    );
}
