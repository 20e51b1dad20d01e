/** A Markdown table of query results; cells are cut to `maxCellChars`, pipes escaped, line breaks flattened. */
export function markdownTable(
  columns: readonly string[],
  rows: readonly (readonly unknown[])[],
  maxCellChars: number,
): string {
  const cell = (value: unknown): string => {
    const text =
      value === null || value === undefined ? 'NULL' : typeof value === 'string' ? value : JSON.stringify(value);
    const cut = text.length > maxCellChars ? `${text.slice(0, maxCellChars)}…` : text;
    return cut.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
  };
  const header = `| ${columns.map(cell).join(' | ')} |`;
  const divider = `|${columns.map(() => '---').join('|')}|`;
  return [header, divider, ...rows.map((row) => `| ${columns.map((_, i) => cell(row[i])).join(' | ')} |`)].join('\n');
}
