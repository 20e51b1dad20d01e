/** Types of the parts of stats.mjs that TypeScript tests use. */
export function percentile(values: readonly number[], p: number): number | undefined;
export function pairedRatio(
  pairs: readonly (readonly [readonly number[], readonly number[]])[],
  p: number,
  options?: { iterations?: number; seed?: number },
): { ratio: number; interval: [number, number] };
