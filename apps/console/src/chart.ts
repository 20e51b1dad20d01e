import type { DayUsage } from './console-reads.js';

type VegaModules = { vega: typeof import('vega'); vegaLite: typeof import('vega-lite') };
let modules: Promise<VegaModules> | undefined;

/**
 * Requests and credits per day as an SVG, rendered on the server with Vega-Lite (the chart library
 * the `data` capability already uses; docs/decisions.md). The spec and its data are the console's
 * own, never a customer's, so it renders in process without the data tool's sandbox.
 */
export async function usageChartSvg(days: readonly DayUsage[]): Promise<string> {
  modules ??= Promise.all([import('vega'), import('vega-lite')]).then(([vega, vegaLite]) => ({ vega, vegaLite }));
  const { vega, vegaLite } = await modules;
  const values = days.flatMap((d) => [
    { day: d.day, measure: 'requests', value: d.requests },
    { day: d.day, measure: 'credits', value: d.credits },
  ]);
  const spec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    width: 640,
    height: 160,
    data: { values },
    mark: { type: 'bar', tooltip: false },
    encoding: {
      x: { field: 'day', type: 'ordinal', title: null, axis: { labelAngle: -45 } },
      xOffset: { field: 'measure' },
      y: { field: 'value', type: 'quantitative', title: null },
      color: { field: 'measure', type: 'nominal', title: null, scale: { range: ['#0b5cad', '#b35900'] }, legend: { orient: 'top' } },
    },
    config: { view: { stroke: null }, font: 'system-ui, sans-serif' },
  };
  const compiled = vegaLite.compile(spec as never).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
