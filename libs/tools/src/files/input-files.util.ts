import { isDataFileName, tableNamesFor } from '../data/table-name.util.js';
import type { ToolFile } from '../tool.js';
import { formatBytes, toolFileBytes } from './tool-file.util.js';

/** A short listing of the request's input files for the system prompt (names, types, sizes, SQL table names). */
export function describeInputFiles(files: readonly ToolFile[]): string {
  if (files.length === 0) return 'No input files were provided.';
  const tables = tableNamesFor(files.filter((f) => isDataFileName(f.name)).map((f) => f.name));
  const lines = files.map((file) => {
    const size = formatBytes(toolFileBytes(file).length);
    const table = tables.get(file.name);
    return `- ${file.name} (${file.mediaType}, ${size}${table ? `; SQL table ${table}` : ''})`;
  });
  return `Input files (${files.length}):\n${lines.join('\n')}`;
}

/** The input file with this name: exact match first, then a unique case-insensitive match. */
export function findInputFile(files: readonly ToolFile[], name: string): ToolFile | undefined {
  const exact = files.find((f) => f.name === name);
  if (exact) return exact;
  const folded = files.filter((f) => f.name.toLowerCase() === name.trim().toLowerCase());
  return folded.length === 1 ? folded[0] : undefined;
}
