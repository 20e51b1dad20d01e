import { isDataFileName, tableNameFor, tableNamesFor } from './table-name.util.js';

describe('tableNameFor', () => {
  it.each([
    ['people.csv', 'people'],
    ['Sales 2024.csv', 'sales_2024'],
    ['Q1-revenue (final).JSON', 'q1_revenue_final'],
    ['2024.csv', 't_2024'],
    ['order.csv', 'order_data'],
    ['select.parquet', 'select_data'],
    ['Café résumé.tsv', 'cafe_resume'],
    ['___.csv', 'data'],
    ['数据.csv', 'data'],
    ['x"; DROP TABLE y; --.csv', 'x_drop_table_y'],
    ['events.jsonl', 'events'],
    [`${'a'.repeat(80)}.csv`, 'a'.repeat(63)],
  ])('%s -> %s', (file, table) => {
    expect(tableNameFor(file)).toBe(table);
  });

  it('only ever yields a plain identifier', () => {
    for (const name of ['a b.csv', '../../etc/passwd.csv', "it's.csv", '"quoted".csv', 'tab\tname.csv']) {
      expect(tableNameFor(name)).toMatch(/^[a-z_][a-z0-9_]*$/);
    }
  });
});

describe('tableNamesFor', () => {
  it('keeps names unique in file order', () => {
    expect([...tableNamesFor(['Sales.csv', 'sales.json', 'SALES.tsv', 'other.csv']).entries()]).toEqual([
      ['Sales.csv', 'sales'],
      ['sales.json', 'sales_2'],
      ['SALES.tsv', 'sales_3'],
      ['other.csv', 'other'],
    ]);
  });
});

describe('isDataFileName', () => {
  it('accepts the loadable formats only', () => {
    expect(['a.csv', 'a.TSV', 'a.json', 'a.jsonl', 'a.ndjson', 'a.parquet'].every(isDataFileName)).toBe(true);
    expect(['a.txt', 'a.pdf', 'csv', 'a.xlsx'].some(isDataFileName)).toBe(false);
  });
});
