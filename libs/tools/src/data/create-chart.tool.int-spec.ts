import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ToolResult } from '../tool.js';
import { createChartTool } from './create-chart.tool.js';

function svgOf(result: ToolResult): string {
  if (!result.ok) throw new Error(`expected a chart, got: ${result.error}`);
  const file = result.files?.[0];
  if (!file) throw new Error('expected a file');
  expect(file.mediaType).toBe('image/svg+xml');
  expect(file.encoding).toBe('utf8');
  return file.content;
}

const rows = [
  { fruit: 'apples', count: 28 },
  { fruit: 'pears', count: 55 },
  { fruit: 'plums', count: 43 },
];

let server: http.Server;
let port: number;
let hits = 0;

beforeAll(async () => {
  server = http.createServer((_req, res) => {
    hits += 1;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(rows));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('create_chart', () => {
  it('renders the simple form to SVG with the data, axes and title', async () => {
    const result = await createChartTool.run({
      mark: 'bar',
      data: rows,
      x: 'fruit',
      y: 'count',
      title: 'Fruit sold',
      name: 'fruit.svg',
    });
    expect(result.ok && result.output).toMatch(/^Created fruit\.svg \(image\/svg\+xml, [\d.]+ KB\)\.$/);
    expect(result.ok && result.files?.[0]?.name).toBe('fruit.svg');
    const svg = svgOf(result);
    expect(svg.startsWith('<svg')).toBe(true);
    for (const text of ['Fruit sold', 'apples', 'pears', 'plums', '>fruit<', '>count<']) expect(svg).toContain(text);
    expect(
      svg.match(/role-mark bar/g)?.length ?? svg.match(/<path[^>]*aria-roledescription="bar"/g)?.length,
    ).toBeGreaterThan(0);
  }, 30_000);

  it('renders a full Vega-Lite spec', async () => {
    const spec = {
      data: {
        values: [
          { t: '2024-01-01', v: 1 },
          { t: '2024-02-01', v: 3 },
        ],
      },
      mark: 'line',
      encoding: {
        x: { field: 't', type: 'temporal', title: 'Month' },
        y: { field: 'v', type: 'quantitative', title: 'Value' },
      },
    };
    const svg = svgOf(await createChartTool.run({ spec, title: 'Trend' }));
    for (const text of ['Trend', 'Month', 'Value']) expect(svg).toContain(text);
  }, 30_000);

  it('refuses remote data in the spec before rendering', async () => {
    await expect(
      createChartTool.run({ spec: { data: { url: `http://127.0.0.1:${port}/rows.json` }, mark: 'bar' } }),
    ).resolves.toEqual({
      ok: false,
      error: `Cannot draw the chart: the spec loads data from "http://127.0.0.1:${port}/rows.json"; remote and file data are not allowed, put the rows in data.values instead.`,
    });
    expect(hits).toBe(0);
  });

  it('refuses an image the renderer would load, through its loader', async () => {
    const spec = {
      data: { values: [{ src: `http://127.0.0.1:${port}/pixel.png` }] },
      mark: { type: 'image', width: 10, height: 10 },
      encoding: { url: { field: 'src', type: 'nominal' } },
    };
    await expect(createChartTool.run({ spec })).resolves.toEqual({
      ok: false,
      error: `Cannot draw the chart: the chart tried to load "http://127.0.0.1:${port}/pixel.png"; images, remote data and links are not allowed.`,
    });
    expect(hits).toBe(0);
  }, 30_000);

  it('stops a spec that computes without bound, and the next chart still renders', async () => {
    const spec = {
      data: { sequence: { start: 0, stop: 100_000_000, as: 'x' } },
      mark: 'point',
      encoding: { x: { field: 'x', type: 'quantitative' } },
    };
    const result = await createChartTool.run({ spec }, { options: { timeoutMs: 8000, memoryMb: 64 } });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toMatch(
      /^Cannot draw the chart: (rendering needed more than the 64 MB memory limit|rendering took longer than the 8000 ms limit)\.$/,
    );
    svgOf(await createChartTool.run({ mark: 'point', data: rows, x: 'fruit', y: 'count' }));
  }, 60_000);

  it('validates the two forms', async () => {
    await expect(createChartTool.run({ mark: 'bar', data: rows, x: 'fruit' })).resolves.toEqual({
      ok: false,
      error: 'Give a Vega-Lite `spec`, or all of `mark`, `data`, `x` and `y`.',
    });
    await expect(createChartTool.run({ mark: 'bar', data: rows, x: 'fruit', y: 'weight' })).resolves.toEqual({
      ok: false,
      error: 'No row of `data` has the field(s) "weight".',
    });
    await expect(createChartTool.run({ spec: { mark: 'bar' }, mark: 'bar' })).resolves.toEqual({
      ok: false,
      error: 'Give either `spec` or the simple form (`mark`, `data`, `x`, `y`), not both.',
    });
    await expect(
      createChartTool.run({ mark: 'pie', data: rows, x: 'fruit', y: 'count', name: 'c.png' }),
    ).resolves.toEqual({
      ok: false,
      error:
        'Invalid arguments for create_chart: arguments.name must match pattern "\\.svg$"; arguments.mark must be one of ["bar","line","point","area","arc","tick","circle","square","rect"].',
    });
  });

  it('reports a spec Vega-Lite cannot compile', async () => {
    await expect(createChartTool.run({ spec: { mark: 'no-such-mark', data: { values: [] } } })).resolves.toEqual({
      ok: false,
      error:
        'Cannot draw the chart: "no-such-mark" is not a Vega-Lite mark; use one of arc, area, bar, image, line, point, rect, rule, text, tick, trail, circle, square, geoshape, boxplot, errorband, errorbar.',
    });
    const result = await createChartTool.run({ spec: { layer: 'not layers', data: { values: [] } } });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toMatch(/^Cannot draw the chart: Vega-Lite could not compile the spec: .+\.$/);
  }, 30_000);
});
