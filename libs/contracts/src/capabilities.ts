/** The capabilities of contract section 2.1, in the order the contract lists them. */
export const CAPABILITIES = ['chat', 'research', 'documents', 'code', 'data', 'files'] as const;

export type Capability = (typeof CAPABILITIES)[number];

export function isCapability(value: unknown): value is Capability {
  return typeof value === 'string' && (CAPABILITIES as readonly string[]).includes(value);
}

export const PLANS = ['free', 'starter', 'pro'] as const;

export type PlanName = (typeof PLANS)[number];

export function isPlanName(value: unknown): value is PlanName {
  return typeof value === 'string' && (PLANS as readonly string[]).includes(value);
}

/** What a plan allows (DESIGN.md section 4). */
export interface Plan {
  readonly name: PlanName;
  /** Initial requests (agent requests and session messages) per billing period. */
  readonly monthlyQuota: number;
  readonly capabilities: readonly Capability[];
}

export const DEFAULT_PLANS: Readonly<Record<PlanName, Plan>> = {
  free: { name: 'free', monthlyQuota: 100, capabilities: ['chat', 'documents'] },
  starter: { name: 'starter', monthlyQuota: 5000, capabilities: CAPABILITIES },
  pro: { name: 'pro', monthlyQuota: 50000, capabilities: CAPABILITIES },
};

/** Credits a capability adds to a request's base cost of 1 when it is used. */
export const DEFAULT_CAPABILITY_SURCHARGES: Readonly<Record<Capability, number>> = {
  chat: 0,
  research: 2,
  documents: 0,
  code: 2,
  data: 1,
  files: 0,
};
