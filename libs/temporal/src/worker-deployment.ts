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

/**
 * Makes `buildId` the deployment's current build (WorkflowService.SetWorkerDeploymentCurrentVersion):
 * new runs start on it and auto-upgrading runs move to it at their next workflow task; runs
 * pinned to another build stay there. With `onlyIfNone` it does so only while the deployment has
 * no current build. The deployment's conflict token makes two replicas deciding at once safe.
 */
export async function promoteBuild(
  service: WorkflowService,
  namespace: string,
  name: string,
  buildId: string,
  options: { identity: string; onlyIfNone?: boolean; timeoutMs?: number },
): Promise<{ promoted: boolean; previous: string | undefined; current: string | undefined }> {
  for (let attempt = 0; ; attempt++) {
    const state = await waitForBuild(service, namespace, name, buildId, options.timeoutMs);
    if (state.current === buildId || (options.onlyIfNone && state.current))
      return { promoted: false, previous: state.current, current: state.current };
    try {
      await service.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName: name,
        buildId,
        conflictToken: state.conflictToken,
        identity: options.identity,
      });
      return { promoted: true, previous: state.current, current: buildId };
    } catch (e) {
      // Another replica or operator changed the deployment since it was read: read it again.
      if (grpcCode(e) !== FAILED_PRECONDITION || attempt >= 5) throw e;
    }
  }
}
