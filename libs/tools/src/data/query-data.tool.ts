import type { DuckDBConnection } from '@duckdb/node-api';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileExtension, toolFileBytes } from '../files/tool-file.util.js';
import { defineTool } from '../tool-definition.js';
import {
  boundText,
  errorMessage,
  toolError,
  toolOk,
  withDefaults,
  type ToolDefinition,
  type ToolFile,
  type ToolResult,
} from '../tool.js';
import { markdownTable } from './markdown-table.util.js';
import { isDataFileName, tableNamesFor } from './table-name.util.js';

/** Operator limits of query_data. */
export interface QueryDataOptions {
  /** Rows shown (default 200); the model is told when there are more. */
  readonly maxRows?: number;
  /** Wall-clock limit of the query, in ms (default 10,000). */
  readonly timeoutMs?: number;
  /** DuckDB memory limit (default "256MB"); there is no spilling to disk. */
  readonly memoryLimit?: string;
  /** DuckDB worker threads (default 2). */
  readonly threads?: number;
  /** Characters shown per cell (default 200). */
  readonly maxCellChars?: number;
  /** Characters of the whole answer (default 50,000). */
  readonly maxOutputChars?: number;
}

/** Defaults of query_data's limits. */
export const QUERY_DATA_DEFAULTS = {
  maxRows: 200,
  timeoutMs: 10_000,
  memoryLimit: '256MB',
  threads: 2,
  maxCellChars: 200,
  maxOutputChars: 50_000,
} as const;

interface QueryDataArgs {
  readonly sql: string;
}

interface LoadedTable {
  readonly file: string;
  readonly table: string;
  readonly columns: string;
}

/** `query_data` (data): SQL (DuckDB dialect) over the input CSV/JSON/Parquet files, with external access off. */
export const queryDataTool: ToolDefinition<QueryDataOptions> = defineTool<QueryDataArgs, QueryDataOptions>(
  'data',
  {
    name: 'query_data',
    description:
      'Run SQL (DuckDB dialect) over the input data files. Each CSV, TSV, JSON, JSON Lines or Parquet input file is a table ' +
      'named after the file: lower-case, without the extension, other characters than letters, digits and _ replaced by _ ' +
      '(e.g. "Sales 2024.csv" -> sales_2024). The result comes back as a Markdown table of at most 200 rows. ' +
      'No file or network access from SQL.',
    parameters: {
      type: 'object',
      properties: {
        sql: {
          type: 'string',
          minLength: 1,
          maxLength: 20_000,
          pattern: '\\S',
          description: 'One or more SQL statements; the last one gives the result.',
        },
      },
      required: ['sql'],
      additionalProperties: false,
    },
  },
  async (args, { inputFiles = [], options, signal }) => {
    const limits = withDefaults<QueryDataOptions>(QUERY_DATA_DEFAULTS, options);
    // Loaded on first use: DuckDB's native library costs a worker that never queries data ~30 MB.
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const instance = await DuckDBInstance.create(':memory:', {
      // Extensions cannot be fetched or loaded behind our back, and nothing spills to disk.
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'false',
      allow_community_extensions: 'false',
      allow_unsigned_extensions: 'false',
      memory_limit: limits.memoryLimit,
      threads: String(limits.threads),
      temp_directory: '',
    });
    let connection: DuckDBConnection | undefined;
    try {
      connection = await instance.connect();
      const { tables, notes } = await loadInputs(connection, inputFiles);
      // From here on SQL can reach nothing outside the database, and cannot switch that back on.
      await connection.run('SET enable_external_access = false');
      await connection.run('SET lock_configuration = true');
      return await runQuery(connection, args.sql, tables, notes, limits, signal);
    } finally {
      connection?.closeSync();
      instance.closeSync();
    }
  },
);

/** Copies the data files into a private directory, creates one table per file, and deletes the copies. */
async function loadInputs(
  connection: DuckDBConnection,
  files: readonly ToolFile[],
): Promise<{ tables: LoadedTable[]; notes: string[] }> {
  const dataFiles = files.filter((f) => isDataFileName(f.name));
  const names = tableNamesFor(dataFiles.map((f) => f.name));
  const tables: LoadedTable[] = [];
  const notes: string[] = [];
  if (dataFiles.length === 0)
    return { tables, notes: ['No CSV, TSV, JSON or Parquet input files, so there are no tables to query.'] };
  const dir = await mkdtemp(path.join(tmpdir(), 'query-data-'));
  try {
    for (const [index, file] of dataFiles.entries()) {
      const ext = fileExtension(file.name);
      // Our own file names, never the model's: nothing user-controlled reaches the path in the SQL.
      const filePath = path.join(dir, `${index}.${ext}`);
      await writeFile(filePath, toolFileBytes(file), { mode: 0o600 });
      const table = names.get(file.name) as string;
      try {
        await connection.run(`CREATE TABLE "${table}" AS SELECT * FROM ${readerFor(ext, filePath)}`);
        const columns = await connection.runAndReadAll(
          `SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY column_index) FROM duckdb_columns() WHERE table_name = '${table}'`,
        );
        tables.push({ file: file.name, table, columns: String(columns.getRowsJson()[0]?.[0] ?? '') });
      } catch (e) {
        notes.push(`${file.name} could not be loaded as a table: ${firstLine(errorMessage(e))}`);
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return { tables, notes };
}

function readerFor(ext: string, filePath: string): string {
  const literal = `'${filePath.replaceAll("'", "''")}'`;
  switch (ext) {
    case 'csv':
      return `read_csv(${literal}, auto_detect = true)`;
    case 'tsv':
      return `read_csv(${literal}, auto_detect = true, delim = '\t')`;
    case 'parquet':
      return `read_parquet(${literal})`;
    case 'jsonl':
    case 'ndjson':
      return `read_json_auto(${literal}, format = 'newline_delimited')`;
    default:
      return `read_json_auto(${literal})`;
  }
}

async function runQuery(
  connection: DuckDBConnection,
  sql: string,
  tables: readonly LoadedTable[],
  notes: readonly string[],
  limits: Required<QueryDataOptions>,
  signal: AbortSignal | undefined,
): Promise<ToolResult> {
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    connection.interrupt();
  }, limits.timeoutMs);
  const onCancel = (): void => connection.interrupt();
  signal?.addEventListener('abort', onCancel, { once: true });
  const prefix = notes.length > 0 ? `${notes.join('\n')}\n\n` : '';
  try {
    // Streams only as many rows as are shown (plus one to know whether there are more).
    const reader = await connection.streamAndReadUntil(sql, limits.maxRows + 1);
    const columns = reader.columnNames();
    const rows = reader.getRowsJson();
    if (columns.length === 0) return toolOk(`${prefix}The statement ran; it returns no rows.`);
    const shown = rows.slice(0, limits.maxRows);
    const more = rows.length > limits.maxRows;
    const count = more
      ? `First ${limits.maxRows} rows shown; the result has more (use LIMIT, filters or aggregates).`
      : `${shown.length} ${shown.length === 1 ? 'row' : 'rows'}.`;
    const table = markdownTable(columns, shown, limits.maxCellChars);
    return toolOk(`${prefix}${boundText(table, limits.maxOutputChars, 'select fewer columns or rows')}\n\n${count}`);
  } catch (e) {
    if (signal?.aborted) return toolError('The query was cancelled.');
    if (timedOut) return toolError(`The query timed out after ${limits.timeoutMs} ms and was stopped.`);
    const listing = tables.length > 0 ? `\nTables: ${tables.map((t) => `${t.table} (${t.columns})`).join('; ')}` : '';
    return toolError(`${prefix}SQL error: ${errorMessage(e)}${listing}`);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onCancel);
  }
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? text;
}
