/** The names of the read models the projector maintains, without loading them (the operator CLI's
 * help lists them; libs/read-models' projections.spec.ts keeps this list equal to PROJECTIONS). */
export const PROJECTION_NAMES = ['usage', 'request-log', 'sessions'] as const;
