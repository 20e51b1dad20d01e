/** Types of the parts of stats.mjs that TypeScript tests use. */
export function percentile(values: readonly number[], p: number): number | undefined;
export function ratioInterval(
  a: readonly number[],
  b: readonly number[],
  p: number,
  options?: { iterations?: number; seed?: number },
): [number, number];
