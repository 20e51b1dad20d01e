import { fileExtension } from '../files/tool-file.util.js';

/** Extensions query_data loads as tables. */
export const DATA_FILE_EXTENSIONS: ReadonlySet<string> = new Set(['csv', 'tsv', 'json', 'jsonl', 'ndjson', 'parquet']);

/** Longest table name produced. */
export const MAX_TABLE_NAME_LENGTH = 63;

// Words that cannot stand unquoted as a table name in DuckDB's SQL; such names get "_data" appended.
const RESERVED = new Set(
  (
    'all analyse analyze and any array as asc asymmetric at both by case cast check collate column constraint create ' +
    'cross current_catalog current_date current_role current_schema current_time current_timestamp current_user default ' +
    'deferrable desc describe distinct do else end except false fetch for foreign from full grant group having in initially ' +
    'inner intersect into is join lateral leading left like limit localtime localtimestamp natural not null offset on only ' +
    'or order outer pivot placing primary qualify references returning right select session_user show similar some ' +
    'summarize symmetric table then to trailing true union unique unpivot using variadic when where window with'
  ).split(' '),
);

/** Whether query_data loads a file with this name. */
export function isDataFileName(name: string): boolean {
  return DATA_FILE_EXTENSIONS.has(fileExtension(name));
}

/**
 * The SQL table name for a file: the name without its extension, lower-cased, every run of other
 * characters than a-z, 0-9 and _ turned into one "_", "t_" prefixed when it would start with a
 * digit, "_data" appended to a reserved word, "data" when nothing is left, at most 63 characters.
 */
export function tableNameFor(fileName: string): string {
  const ext = fileExtension(fileName);
  const stem = ext ? fileName.slice(0, -(ext.length + 1)) : fileName;
  let name = stem
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (name === '') name = 'data';
  if (/^\d/.test(name)) name = `t_${name}`;
  if (RESERVED.has(name)) name = `${name}_data`;
  return name.slice(0, MAX_TABLE_NAME_LENGTH).replace(/_+$/, '');
}

/** Table names for several files, made unique in order with "_2", "_3", ... suffixes. */
export function tableNamesFor(fileNames: readonly string[]): Map<string, string> {
  const taken = new Set<string>();
  const names = new Map<string, string>();
  for (const fileName of fileNames) {
    const base = tableNameFor(fileName);
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base.slice(0, MAX_TABLE_NAME_LENGTH - String(n).length - 1)}_${n}`;
    taken.add(name);
    names.set(fileName, name);
  }
  return names;
}
