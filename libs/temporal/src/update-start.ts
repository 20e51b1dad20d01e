import type { WorkflowClientInterceptor, WorkflowUpdateOptions } from '@temporalio/client';

/** The key of an `UpdateStart` record on the options of `WorkflowHandle.startUpdate`. */
export const UPDATE_START = Symbol('mas.updateStart');

/** What the server answered to `startUpdate`, beyond the handle: `refused` when the Update had
 * already failed when the call returned: the workflow's validator refused it (nothing was recorded,
 * no handler ran), or a retry with the same Update id met an attempt that had failed. Its handle's
 * `result()` throws that failure without another call. */
export interface UpdateStart {
  refused?: boolean;
}

/**
 * The Temporal client answers `startUpdate` with a handle whether the Update was accepted or
 * refused by the workflow's validator (the refusal shows only when `result()` is read). This client
 * interceptor fills an `UpdateStart` record given on the call's options, so a caller that must act
 * on acceptance (record it) knows before it does.
 */
export const updateStartInterceptor: WorkflowClientInterceptor = {
  async startUpdate(input, next) {
    const output = await next(input);
    const record = (input.options as { [UPDATE_START]?: UpdateStart })[UPDATE_START];
    if (record) record.refused = Boolean(output.outcome?.failure);
    return output;
  },
};

/** `options` with an `UpdateStart` record the interceptor fills. */
export function withUpdateStart<T extends WorkflowUpdateOptions>(options: T, record: UpdateStart): T {
  return { ...options, [UPDATE_START]: record };
}
