import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ToolFile, ToolResult } from '../tool.js';
import { queryDataTool, type QueryDataOptions } from './query-data.tool.js';

const file = (name: string, content: string): ToolFile => ({
  name,
  content,
  encoding: 'utf8',
  mediaType: 'text/plain',
});

const inputFiles: ToolFile[] = [
  file('Sales 2024.csv', 'region,month,amount\nnorth,2024-01,10\nsouth,2024-01,7\nnorth,2024-02,12\n'),
  file('regions.json', '[{"region":"north","manager":"Ann"},{"region":"south","manager":"Bob"}]'),
  file('events.jsonl', '{"kind":"click","n":1}\n{"kind":"view","n":3}\n'),
  file('notes.txt', 'not data'),
];

function query(
  sql: string,
  files: readonly ToolFile[] = inputFiles,
  options: QueryDataOptions = {},
): Promise<ToolResult> {
  return queryDataTool.run({ sql }, { inputFiles: files, options });
}

function errorOf(result: ToolResult): string {
  if (result.ok) throw new Error(`expected a failure, got: ${result.output}`);
  return result.error;
}

let outside: string;
let secret: string;

beforeAll(async () => {
  outside = await mkdtemp(path.join(tmpdir(), 'query-data-outside-'));
  secret = path.join(outside, 'secret.csv');
  await writeFile(secret, 'token\nhunter2\n');
});

afterAll(async () => {
  await rm(outside, { recursive: true, force: true });
});

describe('query_data', () => {
  it('loads each CSV/JSON file as a table named after it and answers with a Markdown table', async () => {
    await expect(
      query(
        'SELECT s.region, r.manager, sum(s.amount) AS total FROM sales_2024 s JOIN regions r USING (region) GROUP BY ALL ORDER BY total DESC',
      ),
    ).resolves.toEqual({
      ok: true,
      output: '| region | manager | total |\n|---|---|---|\n| north | Ann | 22 |\n| south | Bob | 7 |\n\n2 rows.',
    });
    await expect(query('SELECT kind, n FROM events ORDER BY n')).resolves.toEqual({
      ok: true,
      output: '| kind | n |\n|---|---|\n| click | 1 |\n| view | 3 |\n\n2 rows.',
    });
  });

  it('limits the rows shown and says so', async () => {
    await expect(query('SELECT range AS i FROM range(10)', inputFiles, { maxRows: 3 })).resolves.toEqual({
      ok: true,
      output:
        '| i |\n|---|\n| 0 |\n| 1 |\n| 2 |\n\nFirst 3 rows shown; the result has more (use LIMIT, filters or aggregates).',
    });
  });

  it('reports SQL errors with the tables and their columns', async () => {
    expect(errorOf(await query('SELECT nope FROM sales_2024'))).toMatch(
      /^SQL error: Binder Error: Referenced column "nope" not found[\s\S]*\nTables: sales_2024 \(region VARCHAR, month VARCHAR, amount BIGINT\); regions \(region VARCHAR, manager VARCHAR\); events \(kind VARCHAR, n BIGINT\)$/,
    );
  });

  it('notes a file that could not be loaded and goes on', async () => {
    const result = await query('SELECT 1 AS one', [file('broken.json', '{"a": ')]);
    expect(result.ok).toBe(true);
    expect(result.ok && result.output).toMatch(
      /^broken\.json could not be loaded as a table: .+\n\n\| one \|\n\|---\|\n\| 1 \|\n\n1 row\.$/,
    );
  });

  it.each([
    ['read_csv on a host file', () => `SELECT * FROM read_csv('${secret}')`],
    ['a replacement scan of a host file', () => `SELECT * FROM '${secret}'`],
    ['read_text', () => "SELECT * FROM read_text('/etc/hostname')"],
    ['glob', () => "SELECT * FROM glob('/*')"],
    ['COPY ... TO', () => `COPY (SELECT 1) TO '${path.join(outside, 'out.csv')}'`],
    ['ATTACH', () => `ATTACH '${path.join(outside, 'x.duckdb')}' AS x`],
    ['EXPORT DATABASE', () => `EXPORT DATABASE '${path.join(outside, 'export')}'`],
    ['INSTALL', () => 'INSTALL httpfs'],
    ['a remote URL', () => "SELECT * FROM read_csv('https://example.com/data.csv')"],
  ])('blocks external access: %s', async (_name, sql) => {
    expect(errorOf(await query(sql()))).toMatch(/^SQL error: Permission Error: .*disabled by configuration/);
    expect(readdirSync(outside)).toEqual(['secret.csv']);
  });

  it('blocks LOAD of extensions', async () => {
    expect(errorOf(await query('LOAD httpfs'))).toMatch(
      /^SQL error: Permission Error: Loading external extensions is disabled through configuration/,
    );
  });

  it.each([
    'SET enable_external_access = true',
    'RESET enable_external_access',
    'SET lock_configuration = false',
    "SET allowed_directories = ['/']",
    "SET temp_directory = '/tmp'",
  ])('cannot switch the protection off: %s', async (sql) => {
    expect(errorOf(await query(sql))).toMatch(
      /^SQL error: Invalid Input Error: Cannot change configuration option ".+" - the configuration has been locked/,
    );
  });

  it('keeps the staged copies of the inputs nowhere SQL can read them', async () => {
    const before = new Set(
      readdirSync(tmpdir()).filter((n) => n.startsWith('query-data-') && !n.startsWith('query-data-outside-')),
    );
    await expect(query('SELECT count(*) AS n FROM sales_2024')).resolves.toEqual({
      ok: true,
      output: '| n |\n|---|\n| 3 |\n\n1 row.',
    });
    const after = readdirSync(tmpdir()).filter(
      (n) => n.startsWith('query-data-') && !n.startsWith('query-data-outside-') && !before.has(n),
    );
    expect(after).toEqual([]);
    expect(existsSync(secret)).toBe(true);
  });

  it('stops a long query at the time limit', async () => {
    const started = Date.now();
    await expect(
      query('SELECT sum(a.range * b.range) FROM range(100000) a, range(100000) b', inputFiles, { timeoutMs: 300 }),
    ).resolves.toEqual({
      ok: false,
      error: 'The query timed out after 300 ms and was stopped.',
    });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('stops a query at the memory limit', async () => {
    expect(errorOf(await query('SELECT list(range) FROM range(100000000)', [], { memoryLimit: '64MB' }))).toMatch(
      /^No CSV, TSV, JSON or Parquet input files, so there are no tables to query.\n\nSQL error: Out of Memory Error/,
    );
  });

  it('answers a statement without rows and refuses blank SQL', async () => {
    await expect(query('CREATE TABLE t AS SELECT 1 AS x')).resolves.toEqual({
      ok: true,
      output: '| Count |\n|---|\n| 1 |\n\n1 row.',
    });
    await expect(query('   ')).resolves.toEqual({
      ok: false,
      error: 'Invalid arguments for query_data: arguments.sql must match pattern "\\S".',
    });
  });

  it('says when there are no data files', async () => {
    await expect(query('SELECT 42 AS answer', [])).resolves.toEqual({
      ok: true,
      output:
        'No CSV, TSV, JSON or Parquet input files, so there are no tables to query.\n\n| answer |\n|---|\n| 42 |\n\n1 row.',
    });
  });
});
