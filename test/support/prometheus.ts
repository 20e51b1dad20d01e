/** One sample of a Prometheus text exposition. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Parses Prometheus's text format (version 0.0.4) into samples; comments are skipped. */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum of the samples named `name` whose labels include `labels` (0 when there is none). */
export function sampleSum(
  samples: readonly Sample[],
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** GETs `url` (an app's /metrics) and parses it; throws unless it answers 200 in Prometheus's format. */
export async function scrapeMetrics(url: string): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(url);
  const text = await res.text();
  if (res.status !== 200 || !(res.headers.get('content-type') ?? '').startsWith('text/plain'))
    throw new Error(`${url}: ${res.status} ${res.headers.get('content-type')}\n${text.slice(0, 500)}`);
  return { text, samples: parseMetrics(text) };
}
