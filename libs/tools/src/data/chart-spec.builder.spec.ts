import { buildSimpleSpec, chartSpecProblem, inferFieldType } from './chart-spec.builder.js';

describe('inferFieldType', () => {
  it('tells numbers, dates and categories apart, ignoring empty values', () => {
    const rows = [
      { n: 1, d: '2024-01-31', c: 'a', mixed: 1 },
      { n: 2.5, d: '2024-02-29T10:00:00Z', c: 'b', mixed: 'x' },
      { n: null, d: '', c: 'c' },
    ];
    expect(inferFieldType(rows, 'n')).toBe('quantitative');
    expect(inferFieldType(rows, 'd')).toBe('temporal');
    expect(inferFieldType(rows, 'c')).toBe('nominal');
    expect(inferFieldType(rows, 'mixed')).toBe('nominal');
    expect(inferFieldType(rows, 'absent')).toBe('nominal');
  });
});

describe('buildSimpleSpec', () => {
  const data = [
    { month: '2024-01', sales: 10, region: 'north' },
    { month: '2024-02', sales: 12, region: 'south' },
  ];

  it('builds a Vega-Lite spec with inline data and inferred types', () => {
    expect(buildSimpleSpec({ mark: 'line', data, x: 'month', y: 'sales', color: 'region', title: 'Sales' })).toEqual({
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      title: 'Sales',
      data: { values: data },
      width: 600,
      height: 360,
      mark: { type: 'line', point: true },
      encoding: {
        x: { field: 'month', type: 'temporal' },
        y: { field: 'sales', type: 'quantitative' },
        color: { field: 'region', type: 'nominal' },
      },
    });
  });

  it('turns arc into a pie: x the categories, y the sizes', () => {
    expect(buildSimpleSpec({ mark: 'arc', data, x: 'region', y: 'sales' })).toMatchObject({
      mark: { type: 'arc' },
      encoding: { theta: { field: 'sales', type: 'quantitative' }, color: { field: 'region', type: 'nominal' } },
    });
  });
});

describe('chartSpecProblem', () => {
  it('accepts a spec with inline data', () => {
    expect(
      chartSpecProblem({ mark: 'bar', data: { values: [{ a: 1 }] }, encoding: { x: { field: 'a' } } }),
    ).toBeUndefined();
  });

  it('refuses data URLs anywhere in the spec, nested layers included', () => {
    expect(
      chartSpecProblem({ layer: [{ mark: 'bar' }, { data: { url: 'http://169.254.169.254/latest' }, mark: 'line' }] }),
    ).toBe(
      'the spec loads data from "http://169.254.169.254/latest"; remote and file data are not allowed, put the rows in data.values instead',
    );
    expect(chartSpecProblem({ data: { url: '/etc/passwd', format: { type: 'csv' } }, mark: 'bar' })).toMatch(
      /^the spec loads data from "\/etc\/passwd"/,
    );
  });

  it('refuses non-objects and absurd sizes', () => {
    expect(chartSpecProblem([1])).toBe('the spec must be a JSON object (a Vega-Lite specification)');
    expect(chartSpecProblem({ mark: 'bar', width: 1e6 })).toBe('width must be between 0 and 4000 pixels');
    expect(chartSpecProblem({ mark: { type: 'pie' } })).toMatch(
      /^"pie" is not a Vega-Lite mark; use one of arc, area, bar/,
    );
    expect(chartSpecProblem({ layer: [{ mark: 'bar' }] })).toBeUndefined();
  });
});
