import { setTimeout as sleep } from 'node:timers/promises';
import proto from '@temporalio/proto';

type WorkflowService = proto.temporal.api.workflowservice.v1.WorkflowService;
const { VersionDrainageStatus, WorkerDeploymentVersionStatus } = proto.temporal.api.enums.v1;

/** One build (Worker Deployment Version) of a worker deployment, as Temporal reports it. */
export interface DeploymentBuild {
  readonly buildId: string;
  /** inactive (never current), current, ramping, draining (pinned runs left), drained. */
  readonly status: string;
  readonly createdAt: Date | undefined;
}

/** A worker deployment: its builds and which one new runs (and auto-upgrading ones) go to. */
export interface DeploymentState {
  readonly name: string;
  readonly current: string | undefined;
  readonly builds: readonly DeploymentBuild[];
  readonly conflictToken: Uint8Array;
}

const NOT_FOUND = 5;
const FAILED_PRECONDITION = 9;
const grpcCode = (e: unknown): number | undefined => (e as { code?: number }).code;

const statusName = (status: number, drainage: number): string =>
  status === WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING &&
  drainage === VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINED
    ? 'drained'
    : (WorkerDeploymentVersionStatus[status] ?? 'unspecified')
        .replace('WORKER_DEPLOYMENT_VERSION_STATUS_', '')
        .toLowerCase();

const toDate = (t: { seconds?: unknown } | null | undefined): Date | undefined =>
  t?.seconds == null ? undefined : new Date(Number(t.seconds) * 1000);

/** The worker deployment `name` (WorkflowService.DescribeWorkerDeployment); undefined when no
 * versioned worker has polled under it yet. */
export async function describeDeployment(
  service: WorkflowService,
  namespace: string,
  name: string,
): Promise<DeploymentState | undefined> {
  try {
    const { workerDeploymentInfo: info, conflictToken } = await service.describeWorkerDeployment({
      namespace,
      deploymentName: name,
    });
    const current = info?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined;
    const builds = (info?.versionSummaries ?? []).map((v) => ({
      buildId: v.deploymentVersion?.buildId ?? '',
      status: statusName(v.status ?? 0, v.drainageStatus ?? 0),
      createdAt: toDate(v.createTime),
    }));
    return { name, current: current || undefined, builds, conflictToken };
  } catch (e) {
    if (grpcCode(e) === NOT_FOUND) return undefined;
    throw e;
  }
}

/** Waits until Temporal lists `buildId` as a build of the deployment (its worker's first poll
 * registers it, asynchronously). */
export async function waitForBuild(
  service: WorkflowService,
  namespace: string,
  name: string,
  buildId: string,
  timeoutMs = 60_000,
): Promise<DeploymentState> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await describeDeployment(service, namespace, name);
    if (state?.builds.some((b) => b.buildId === buildId)) return state;
    if (Date.now() > deadline)
      throw new Error(
        `build ${buildId} of worker deployment ${name} was not registered within ${timeoutMs / 1000} s: is a worker of that build polling?`,
      );
    await sleep(200);
  }
}

/** The open runs of one build: pinned ones stay on it until they end; auto-upgrading ones
 * (sessions, webhook deliveries, the reconciler) move to the current build at their next task. */
export interface BuildRuns {
  readonly pinned: number;
  readonly moving: number;
}

/** Open runs per build, by the search attributes Temporal keeps for versioned runs. */
export async function runsByBuild(
  service: WorkflowService,
  namespace: string,
  state: DeploymentState,
): Promise<Map<string, BuildRuns>> {
  const runs = new Map<string, BuildRuns>();
  const count = async (buildId: string, behavior: 'Pinned' | 'AutoUpgrade'): Promise<number> => {
    const query = `TemporalWorkerDeploymentVersion = '${state.name}:${buildId}' AND ExecutionStatus = 'Running' AND TemporalWorkflowVersioningBehavior = '${behavior}'`;
    return Number((await service.countWorkflowExecutions({ namespace, query })).count ?? 0);
  };
  for (const b of state.builds)
    runs.set(b.buildId, { pinned: await count(b.buildId, 'Pinned'), moving: await count(b.buildId, 'AutoUpgrade') });
  return runs;
}

/** Whether build `a` was registered (first polled) before build `b`; unknown times say no. */
const registeredBefore = (state: DeploymentState, a: string, b: string): boolean => {
  const at = (id: string) => state.builds.find((x) => x.buildId === id)?.createdAt?.getTime();
  const ta = at(a);
  const tb = at(b);
  return ta !== undefined && tb !== undefined && ta < tb;
};

/**
 * Before a rollback (making current a build registered before the current one): pins every open
 * auto-upgrading run whose last task ran on a newer build to that build (a versioning override),
 * so that no session, delivery or reconciler run moves back to code that may not replay its
 * history (a `patched()` marker the older build does not know). Those runs finish where they are;
 * their build drains as they end (`deploy status` counts them as pinned). Answers how many.
 */
async function keepNewerRunsWhereTheyAre(
  service: WorkflowService,
  namespace: string,
  state: DeploymentState,
  target: string,
  identity: string,
): Promise<number> {
  const newer = state.builds.filter((b) => b.buildId !== target && registeredBefore(state, target, b.buildId));
  let pinned = 0;
  for (const b of newer) {
    const query = `TemporalWorkerDeploymentVersion = '${state.name}:${b.buildId}' AND ExecutionStatus = 'Running' AND TemporalWorkflowVersioningBehavior = 'AutoUpgrade'`;
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await service.listWorkflowExecutions({ namespace, query, pageSize: 1000, nextPageToken });
      for (const run of page.executions ?? []) {
        await service.updateWorkflowExecutionOptions({
          namespace,
          identity,
          workflowExecution: { workflowId: run.execution?.workflowId, runId: run.execution?.runId },
          workflowExecutionOptions: {
            versioningOverride: {
              pinned: {
                behavior:
                  proto.temporal.api.workflow.v1.VersioningOverride.PinnedOverrideBehavior
                    .PINNED_OVERRIDE_BEHAVIOR_PINNED,
                version: { deploymentName: state.name, buildId: b.buildId },
              },
            },
          },
          updateMask: { paths: ['versioning_override'] },
        });
        pinned++;
      }
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken);
  }
  return pinned;
}

/**
 * Makes `buildId` the deployment's current build (WorkflowService.SetWorkerDeploymentCurrentVersion):
 * new runs start on it and auto-upgrading runs move to it at their next workflow task; runs
 * pinned to another build stay there. A rollback (a build registered before the current one) first
 * keeps the auto-upgrading runs of newer builds where they are (keepNewerRunsWhereTheyAre). With
 * `onlyIfNone` it promotes only while the deployment has no current build; with `onlyIfNewer`,
 * only over a current build registered before this one (a restarted worker of an older build
 * never takes the deployment back). The deployment's conflict token makes two replicas deciding
 * at once safe.
 */
export async function promoteBuild(
  service: WorkflowService,
  namespace: string,
  name: string,
  buildId: string,
  options: { identity: string; onlyIfNone?: boolean; onlyIfNewer?: boolean; timeoutMs?: number },
): Promise<{ promoted: boolean; previous: string | undefined; current: string | undefined; keptOnNewer: number }> {
  for (let attempt = 0; ; attempt++) {
    const state = await waitForBuild(service, namespace, name, buildId, options.timeoutMs);
    const unchanged = { promoted: false, previous: state.current, current: state.current, keptOnNewer: 0 };
    if (state.current === buildId || (options.onlyIfNone && state.current)) return unchanged;
    if (options.onlyIfNewer && state.current && !registeredBefore(state, state.current, buildId)) return unchanged;
    const keptOnNewer =
      state.current && registeredBefore(state, buildId, state.current)
        ? await keepNewerRunsWhereTheyAre(service, namespace, state, buildId, options.identity)
        : 0;
    try {
      await service.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName: name,
        buildId,
        conflictToken: state.conflictToken,
        identity: options.identity,
      });
      return { promoted: true, previous: state.current, current: buildId, keptOnNewer };
    } catch (e) {
      // Another replica or operator changed the deployment since it was read: read it again.
      if (grpcCode(e) !== FAILED_PRECONDITION || attempt >= 5) throw e;
    }
  }
}
