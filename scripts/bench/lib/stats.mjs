// Percentiles and the closed-loop load runner.
import { now } from './http.mjs';

/** Nearest-rank percentile of numbers (p in 0..100); undefined for an empty list. */
export function percentile(values, p) {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1];
}

/** p50/p95/p99 (and n, mean, max) of numbers. */
export function summary(values) {
  const n = values.length;
  if (n === 0) return { n: 0 };
  return {
    n,
    p50: percentile(values, 50),
    p95: percentile(values, 95),
    p99: percentile(values, 99),
    mean: values.reduce((a, b) => a + b, 0) / n,
    max: Math.max(...values),
  };
}

/**
 * The ratio percentile(b, p) / percentile(a, p) of one pair of windows [a, b], or of several (the
 * rounds of one run, each a window without and one with a load), as the geometric mean of their
 * ratios; and how far it can be trusted: its 95% bootstrap interval (each of `iterations` rounds
 * draws every window again, with replacement, at its own size; the interval holds the middle 95%
 * of the rounds' ratios). A p99 over 100 samples rests on its one or two slowest: two windows of
 * the very same load then differ by tens of per cent, and a ratio whose interval is that wide
 * cannot tell a 20% move from none; more samples, or more pairs, narrow it. Each pair keeps its own
 * baseline, so a drift between pairs (a database that grows) does not count as an effect. Seeded,
 * so a run's figure can be computed again. NaNs when a window is empty.
 * @param {[number[], number[]][]} pairs
 * @returns {{ ratio: number, interval: [number, number] }}
 */
export function pairedRatio(pairs, p, { iterations = 2000, seed = 1 } = {}) {
  if (pairs.length === 0 || pairs.some(([a, b]) => a.length === 0 || b.length === 0))
    return { ratio: NaN, interval: [NaN, NaN] };
  const random = mulberry32(seed);
  const rank = (n) => Math.min(n, Math.max(1, Math.ceil((p / 100) * n))) - 1;
  // The nearest-rank percentile of a window, or of a redrawn one (typed arrays sort numbers
  // natively: fast).
  const at = (xs, redraw) => {
    const sample = new Float64Array(xs.length);
    for (let i = 0; i < xs.length; i++) sample[i] = redraw ? xs[Math.floor(random() * xs.length)] : xs[i];
    return sample.sort()[rank(xs.length)];
  };
  const mean = (redraw) =>
    Math.exp(pairs.reduce((sum, [a, b]) => sum + Math.log(at(b, redraw) / at(a, redraw)), 0) / pairs.length);
  const ratios = Array.from({ length: iterations }, () => mean(true));
  return { ratio: mean(false), interval: [percentile(ratios, 2.5), percentile(ratios, 97.5)] };
}

/** A small seeded generator of numbers in [0, 1) (mulberry32). */
function mulberry32(seed) {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

/** a - b for each percentile (both summaries), for "overhead over the baseline". */
export function difference(a, b) {
  if (!a?.n || !b?.n) return undefined;
  return { p50: a.p50 - b.p50, p95: a.p95 - b.p95, p99: a.p99 - b.p99 };
}

/** A 2xx status. */
export const ok = (status) => status >= 200 && status < 300;

/**
 * Runs `fn(i, signal)` from `clients` concurrent loops until `maxRequests` were issued or `maxMs`
 * passed. A request in flight at the deadline completes (`fn` bounds its own time), unless
 * `abortAtDeadline`: then `signal` aborts it. `fn` must not throw. Returns the results in
 * completion order and the times.
 */
export async function closedLoop({ clients, maxRequests, maxMs, fn, abortAtDeadline = false }) {
  const results = [];
  let issued = 0;
  const startedAt = now();
  const deadline = startedAt + maxMs;
  const abort = new AbortController();
  const timer = abortAtDeadline ? setTimeout(() => abort.abort(), maxMs) : undefined;
  const loop = async () => {
    while (issued < maxRequests && now() < deadline) {
      const i = issued++;
      results.push(await fn(i, abort.signal));
    }
  };
  await Promise.all(Array.from({ length: clients }, loop));
  clearTimeout(timer);
  return { results, startedAt, deadline, endedAt: now() };
}

/** Rounds for display: 1 decimal below 100, none above. */
export function fmt(x) {
  if (x === undefined || x === null || Number.isNaN(x)) return '-';
  const abs = Math.abs(x);
  return abs >= 100 ? x.toFixed(0) : abs >= 10 ? x.toFixed(1) : x.toFixed(2);
}

/** "a / b / c unit" of a summary's percentiles. */
export function triple(s, unit = 'ms', sign = false) {
  if (!s || s.p50 === undefined) return '-';
  const f = (x) => (sign && x >= 0 ? '+' : '') + fmt(x);
  return `${f(s.p50)} / ${f(s.p95)} / ${f(s.p99)} ${unit}`;
}
