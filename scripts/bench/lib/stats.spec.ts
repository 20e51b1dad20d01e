import { percentile, ratioInterval } from './stats.mjs';

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

describe('ratioInterval', () => {
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
});
