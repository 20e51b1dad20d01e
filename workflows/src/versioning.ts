import { workflowInfo } from '@temporalio/workflow';
import type { VersioningBehavior, WorkflowDefinitionOptionsOrGetter } from '@temporalio/common';

/**
 * A workflow's Worker Versioning behaviour (docs/decisions.md, "Worker Versioning"), declared only
 * on a versioned worker: Temporal refuses a workflow task completed with a behaviour by a worker
 * without a deployment version ("versioning behavior cannot be specified without deployment
 * options being set with versioned mode"), and the SDK sends the declared one whatever the worker.
 * Read once, before the run's first activation on a worker.
 */
export const whenVersioned =
  (versioningBehavior: VersioningBehavior): WorkflowDefinitionOptionsOrGetter =>
  () =>
    // An unversioned worker reports a build id of its own too, with no deployment name.
    workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior } : {};
