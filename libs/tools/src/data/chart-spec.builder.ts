/** Marks the simple chart form accepts. */
export const SIMPLE_MARKS = ['bar', 'line', 'point', 'area', 'arc', 'tick', 'circle', 'square', 'rect'] as const;

/** The simple chart form: a mark, rows of data, and the fields to plot. */
export interface SimpleChart {
  readonly mark: (typeof SIMPLE_MARKS)[number];
  readonly data: readonly Readonly<Record<string, unknown>>[];
  readonly x: string;
  readonly y: string;
  readonly color?: string;
  readonly title?: string;
}

/** Vega-Lite's marks, composite marks included. */
export const VEGA_LITE_MARKS: ReadonlySet<string> = new Set([
  'arc',
  'area',
  'bar',
  'image',
  'line',
  'point',
  'rect',
  'rule',
  'text',
  'tick',
  'trail',
  'circle',
  'square',
  'geoshape',
  'boxplot',
  'errorband',
  'errorbar',
]);

/** Largest width or height a chart may ask for, in pixels. */
export const MAX_CHART_DIMENSION = 4000;

type FieldType = 'quantitative' | 'temporal' | 'nominal';

/** Vega-Lite type of a field from its values: all numbers, all ISO-like dates, or categories. */
export function inferFieldType(rows: readonly Readonly<Record<string, unknown>>[], field: string): FieldType {
  const values = rows.map((row) => row[field]).filter((v) => v !== null && v !== undefined && v !== '');
  if (values.length === 0) return 'nominal';
  if (values.every((v) => typeof v === 'number' && Number.isFinite(v))) return 'quantitative';
  if (
    values.every(
      (v) =>
        typeof v === 'string' &&
        /^\d{4}-\d{2}(-\d{2})?([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v) &&
        !Number.isNaN(Date.parse(v)),
    )
  ) {
    return 'temporal';
  }
  return 'nominal';
}

/** The Vega-Lite spec of a simple chart; `arc` becomes a pie (x the categories, y the sizes). */
export function buildSimpleSpec(chart: SimpleChart): Record<string, unknown> {
  const base: Record<string, unknown> = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    ...(chart.title ? { title: chart.title } : {}),
    data: { values: chart.data },
  };
  const color = chart.color
    ? {
        color: {
          field: chart.color,
          type: inferFieldType(chart.data, chart.color) === 'quantitative' ? 'quantitative' : 'nominal',
        },
      }
    : {};
  if (chart.mark === 'arc') {
    return {
      ...base,
      width: 360,
      height: 360,
      mark: { type: 'arc', tooltip: true },
      encoding: { theta: { field: chart.y, type: 'quantitative' }, color: { field: chart.x, type: 'nominal' } },
    };
  }
  const yType = inferFieldType(chart.data, chart.y);
  return {
    ...base,
    width: 600,
    height: 360,
    mark: { type: chart.mark, ...(chart.mark === 'line' ? { point: true } : {}) },
    encoding: {
      x: { field: chart.x, type: inferFieldType(chart.data, chart.x) },
      y: { field: chart.y, type: yType },
      ...color,
    },
  };
}

/**
 * Why a spec is refused before rendering, or undefined: anything that names a remote resource
 * (`url`), or a size beyond MAX_CHART_DIMENSION. The renderer's loader refuses everything as well.
 */
export function chartSpecProblem(spec: unknown): string | undefined {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec))
    return 'the spec must be a JSON object (a Vega-Lite specification)';
  const urls: string[] = [];
  const walk = (value: unknown, depth: number): void => {
    if (depth > 64 || typeof value !== 'object' || value === null) return;
    if (Array.isArray(value)) {
      for (const item of value) walk(item, depth + 1);
      return;
    }
    for (const [key, child] of Object.entries(value)) {
      if (key === 'url' && typeof child === 'string') urls.push(child);
      else walk(child, depth + 1);
    }
  };
  walk(spec, 0);
  if (urls.length > 0) {
    return `the spec loads data from ${urls.map((u) => `"${u.slice(0, 200)}"`).join(', ')}; remote and file data are not allowed, put the rows in data.values instead`;
  }
  const mark = (spec as Record<string, unknown>)['mark'];
  const markType = typeof mark === 'object' && mark !== null ? (mark as Record<string, unknown>)['type'] : mark;
  if (mark !== undefined && (typeof markType !== 'string' || !VEGA_LITE_MARKS.has(markType))) {
    return `"${String(markType)}" is not a Vega-Lite mark; use one of ${[...VEGA_LITE_MARKS].join(', ')}`;
  }
  for (const key of ['width', 'height'] as const) {
    const size = (spec as Record<string, unknown>)[key];
    if (typeof size === 'number' && (size > MAX_CHART_DIMENSION || size < 0))
      return `${key} must be between 0 and ${MAX_CHART_DIMENSION} pixels`;
  }
  return undefined;
}
