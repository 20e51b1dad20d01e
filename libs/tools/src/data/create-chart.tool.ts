import { MAX_FILE_NAME_LENGTH, fileNameProblem, formatBytes } from '../files/tool-file.util.js';
import { defineTool } from '../tool-definition.js';
import { toolError, toolOk, withDefaults, type ToolDefinition } from '../tool.js';
import { SIMPLE_MARKS, buildSimpleSpec, chartSpecProblem, type SimpleChart } from './chart-spec.builder.js';
import { renderChartSvg } from './chart.renderer.js';

/** Operator limits of create_chart. */
export interface CreateChartOptions {
  /** Wall-clock limit of one rendering, in ms (default 15,000; includes starting the renderer). */
  readonly timeoutMs?: number;
  /** Heap of the renderer process, in MB (default 256). */
  readonly memoryMb?: number;
  /** Largest SVG produced, in bytes (default 5 MiB). */
  readonly maxSvgBytes?: number;
}

/** Defaults of create_chart's limits. */
export const CREATE_CHART_DEFAULTS = { timeoutMs: 15_000, memoryMb: 256, maxSvgBytes: 5 * 1024 * 1024 } as const;

/** Rows accepted in the simple form. */
export const MAX_CHART_ROWS = 5000;
const MAX_SPEC_CHARS = 2_000_000;

interface CreateChartArgs {
  readonly name?: string;
  readonly spec?: Record<string, unknown>;
  readonly mark?: SimpleChart['mark'];
  readonly data?: readonly Record<string, unknown>[];
  readonly x?: string;
  readonly y?: string;
  readonly color?: string;
  readonly title?: string;
}

/** `create_chart` (data): renders a Vega-Lite chart (a full spec, or mark + rows + x/y) to an SVG file. */
export const createChartTool: ToolDefinition<CreateChartOptions> = defineTool<CreateChartArgs, CreateChartOptions>(
  'data',
  {
    name: 'create_chart',
    description:
      'Draw a chart and return it as an SVG file. Either give a full Vega-Lite specification in `spec` with the data inline ' +
      '(data.values; URLs are not allowed), or the simple form: `mark`, `data` (an array of row objects), and the `x` and `y` ' +
      'field names (optionally `color`). For mark "arc" (pie), x is the category and y the size.',
    parameters: {
      type: 'object',
      properties: {
        name: {
          type: 'string',
          minLength: 5,
          maxLength: MAX_FILE_NAME_LENGTH,
          pattern: '\\.svg$',
          description: 'File name ending in .svg (default "chart.svg").',
        },
        spec: { type: 'object', description: 'A complete Vega-Lite specification with inline data.' },
        mark: { type: 'string', enum: [...SIMPLE_MARKS], description: 'Simple form: the mark type.' },
        data: {
          type: 'array',
          maxItems: MAX_CHART_ROWS,
          items: { type: 'object' },
          description: 'Simple form: the rows to plot.',
        },
        x: { type: 'string', minLength: 1, description: 'Simple form: field on the x axis (categories for "arc").' },
        y: { type: 'string', minLength: 1, description: 'Simple form: field on the y axis (sizes for "arc").' },
        color: { type: 'string', minLength: 1, description: 'Simple form: optional field that colours the marks.' },
        title: {
          type: 'string',
          maxLength: 200,
          description: 'Chart title (simple form, or added to a spec without one).',
        },
      },
      additionalProperties: false,
    },
  },
  async (args, { options, signal }) => {
    const limits = withDefaults<CreateChartOptions>(CREATE_CHART_DEFAULTS, options);
    const name = args.name ?? 'chart.svg';
    const nameProblem = fileNameProblem(name);
    if (nameProblem) return toolError(`Cannot create "${name}": ${nameProblem}.`);

    const simple = [args.mark, args.data, args.x, args.y, args.color];
    let spec: Record<string, unknown>;
    if (args.spec) {
      if (simple.some((v) => v !== undefined))
        return toolError('Give either `spec` or the simple form (`mark`, `data`, `x`, `y`), not both.');
      spec = args.title && args.spec['title'] === undefined ? { ...args.spec, title: args.title } : args.spec;
    } else {
      const { mark, data, x, y } = args;
      if (!mark || !data || !x || !y)
        return toolError('Give a Vega-Lite `spec`, or all of `mark`, `data`, `x` and `y`.');
      if (data.length === 0) return toolError('`data` has no rows to plot.');
      const fields = [x, y, ...(args.color ? [args.color] : [])];
      const missing = fields.filter((field) => !data.some((row) => field in row));
      if (missing.length > 0)
        return toolError(`No row of \`data\` has the field(s) ${missing.map((m) => `"${m}"`).join(', ')}.`);
      spec = buildSimpleSpec({
        mark,
        data,
        x,
        y,
        ...(args.color ? { color: args.color } : {}),
        ...(args.title ? { title: args.title } : {}),
      });
    }

    const problem = chartSpecProblem(spec);
    if (problem) return toolError(`Cannot draw the chart: ${problem}.`);
    if (JSON.stringify(spec).length > MAX_SPEC_CHARS)
      return toolError(`Cannot draw the chart: the spec is larger than ${MAX_SPEC_CHARS} characters.`);

    const rendered = await renderChartSvg(spec, limits, signal);
    if (!rendered.ok) return toolError(`Cannot draw the chart: ${rendered.error}.`);
    const size = formatBytes(Buffer.byteLength(rendered.svg, 'utf8'));
    const warnings =
      rendered.warnings.length > 0
        ? `\nRenderer warnings:\n${rendered.warnings.map((w) => `- ${w.slice(0, 300)}`).join('\n')}`
        : '';
    return toolOk(`Created ${name} (image/svg+xml, ${size}).${warnings}`, [
      { name, content: rendered.svg, encoding: 'utf8', mediaType: 'image/svg+xml' },
    ]);
  },
);
