// The data tool's renderer (#libs/tools loads every tool's module at the console's start, once).
import { renderChartSvg } from '#libs/tools';
import type { DayUsage } from './console-reads.js';

/** Limits of one rendering: the console's chart is small and its spec its own. */
const LIMITS = { timeoutMs: 10_000, memoryMb: 256, maxSvgBytes: 512 * 1024 };

/**
 * Requests and credits per day as an SVG, rendered on the server with Vega-Lite by the renderer
 * the `data` capability uses (a child process with memory and time limits; docs/decisions.md):
 * one way of drawing charts, no chart script in the browser. Null when rendering failed (the page
 * says so and shows the figures as text).
 */
export async function usageChartSvg(days: readonly DayUsage[]): Promise<string | null> {
  const values = days.flatMap((d) => [
    { day: d.day, measure: 'requests', value: d.requests },
    { day: d.day, measure: 'credits', value: d.credits },
  ]);
  const spec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    width: 640,
    height: 160,
    data: { values },
    mark: { type: 'bar' },
    encoding: {
      x: { field: 'day', type: 'ordinal', title: null, axis: { labelAngle: -45 } },
      xOffset: { field: 'measure' },
      y: { field: 'value', type: 'quantitative', title: null, axis: { format: 'd', tickMinStep: 1 } },
      color: {
        field: 'measure',
        type: 'nominal',
        title: null,
        scale: { range: ['#0b5cad', '#b35900'] },
        legend: { orient: 'top' },
      },
    },
    config: { view: { stroke: null }, font: 'system-ui, sans-serif' },
  };
  const rendered = await renderChartSvg(spec, LIMITS);
  return rendered.ok ? rendered.svg : null;
}
