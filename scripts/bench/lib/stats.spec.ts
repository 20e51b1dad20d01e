import { pairedRatio, percentile } from './stats.mjs';

const ratioInterval = (a: number[], b: number[], p: number, options?: { seed: number }) =>
  pairedRatio([[a, b]], p, options).interval;

/** Latencies as the drill sees them: most near 50 ms, a long tail (a seeded log-normal). */
function latencies(n: number, seed: number): number[] {
  let t = 12_345 + seed * 1_000_003;
  const random = () => {
    t = (t * 16807) % 2147483647;
    return t / 2147483647;
  };
  return Array.from({ length: n }, () => {
    const normal = Math.sqrt(-2 * Math.log(random())) * Math.cos(2 * Math.PI * random());
    return 50 * Math.exp(0.35 * normal);
  });
}

describe('percentile', () => {
  it('takes the nearest rank', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect([percentile(xs, 50), percentile(xs, 99), percentile(xs, 100), percentile([], 99)]).toEqual([
      50,
      99,
      100,
      undefined,
    ]);
  });
});

describe('pairedRatio', () => {
  it('holds 1 for two samples of the same load, and is wide when each has 100', () => {
    const [lo, hi] = ratioInterval(latencies(100, 1), latencies(100, 2), 99);
    expect(lo).toBeLessThan(1);
    expect(hi).toBeGreaterThan(1);
    // Too wide to tell a 20% move from none.
    expect(hi / lo).toBeGreaterThan(1.4);
  });

  it('narrows with more samples, around the true ratio', () => {
    const a = latencies(1000, 3);
    const doubled = a.map((x) => 2 * x);
    const [lo, hi] = ratioInterval(a, doubled, 99);
    expect(lo).toBeGreaterThan(1.6);
    expect(hi).toBeLessThan(2.4);
    const [smallLo, smallHi] = ratioInterval(a.slice(0, 100), doubled.slice(0, 100), 99);
    expect(hi - lo).toBeLessThan((smallHi - smallLo) / 2);
  });

  it('gives the same interval for the same seed, and none for an empty side', () => {
    const a = latencies(200, 5);
    const b = latencies(200, 6);
    expect(ratioInterval(a, b, 99, { seed: 7 })).toEqual(ratioInterval(a, b, 99, { seed: 7 }));
    expect(ratioInterval([], b, 99)).toEqual([NaN, NaN]);
  });

  it('is the ratio of one pair, and the geometric mean of several', () => {
    const a = latencies(500, 8);
    const doubled = a.map((x) => 2 * x);
    expect(pairedRatio([[a, doubled]], 99, { iterations: 1 }).ratio).toBeCloseTo(2, 10);
    expect(
      pairedRatio(
        [
          [a, a],
          [a, a.map((x) => 4 * x)],
        ],
        99,
        { iterations: 1 },
      ).ratio,
    ).toBeCloseTo(2, 10);
  });

  it('narrows with more pairs of the same load, each against its own baseline', () => {
    const pairs = [1, 2, 3].map((round): [number[], number[]] => [
      latencies(300, 10 + round),
      latencies(300, 20 + round),
    ]);
    const [oneLo, oneHi] = pairedRatio(pairs.slice(0, 1), 99, { iterations: 500 }).interval;
    const [lo, hi] = pairedRatio(pairs, 99, { iterations: 500 }).interval;
    expect(lo).toBeLessThan(1);
    expect(hi).toBeGreaterThan(1);
    expect(hi / lo).toBeLessThan(oneHi / oneLo);
    // A baseline that drifts between pairs (every latency of a later pair 30% longer) is no effect.
    const drifted = pairs.map(([a, b], i): [number[], number[]] => [
      a.map((x) => x * 1.3 ** i),
      b.map((x) => x * 1.3 ** i),
    ]);
    expect(pairedRatio(drifted, 99, { iterations: 1 }).ratio).toBeCloseTo(
      pairedRatio(pairs, 99, { iterations: 1 }).ratio,
      10,
    );
  });
});
