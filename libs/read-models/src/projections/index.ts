import type { Projection } from './projection.js';
import { requestLogProjection } from './request-log.projection.js';
import { sessionsProjection } from './sessions.projection.js';
import { usageProjection } from './usage.projection.js';

export type { Projection } from './projection.js';
/** Every read model the projector maintains (PROJECTION_NAMES in the contracts names them for
 * what must not load them). */
export const PROJECTIONS: readonly Projection[] = [usageProjection, requestLogProjection, sessionsProjection];
