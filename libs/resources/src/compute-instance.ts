import type { AppConfig } from '#libs/config';

/** `_compute_instance`: where a paused request lives, `<namespace>/<task queue>` of its compute
 * cell, so a deployment with several cells can route a tool-outputs submission to the right one. */
export function computeInstanceOf(config: Pick<AppConfig, 'temporal'>): string {
  return `${config.temporal.namespace}/${config.temporal.taskQueue}`;
}
