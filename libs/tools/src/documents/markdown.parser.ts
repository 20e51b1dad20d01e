/**
 * A small Markdown reader for PDF rendering: the block structure (headings, paragraphs, lists,
 * code, quotes, rules, tables) and inline emphasis. Not CommonMark; enough to lay out what a
 * model writes. Pure, so the structure is unit-tested apart from the PDF bytes.
 */

/** One inline run of text with its emphasis. */
export interface InlineSpan {
  readonly text: string;
  readonly bold?: boolean;
  readonly italic?: boolean;
  readonly code?: boolean;
}

/** One list item; depth 0 is the outermost level. */
export interface ListItem {
  readonly depth: number;
  readonly marker: string;
  readonly spans: readonly InlineSpan[];
}

/** A block of a Markdown document. */
export type MarkdownBlock =
  | { readonly kind: 'heading'; readonly level: 1 | 2 | 3 | 4 | 5 | 6; readonly spans: readonly InlineSpan[] }
  | { readonly kind: 'paragraph'; readonly spans: readonly InlineSpan[] }
  | { readonly kind: 'list'; readonly items: readonly ListItem[] }
  | { readonly kind: 'code'; readonly text: string }
  | { readonly kind: 'quote'; readonly spans: readonly InlineSpan[] }
  | { readonly kind: 'rule' }
  | { readonly kind: 'table'; readonly rows: readonly (readonly string[])[] };

const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const FENCE = /^ {0,3}(```|~~~)/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const BULLET = /^(\s*)([-*+])\s+(.*)$/;
const ORDERED = /^(\s*)(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const TABLE_ROW = /^\s*\|.*\|\s*$/;
const TABLE_DIVIDER = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

/** Splits Markdown into blocks. */
export function parseMarkdown(markdown: string): MarkdownBlock[] {
  const lines = markdown.replace(/\r\n?/g, '\n').split('\n');
  const blocks: MarkdownBlock[] = [];
  let paragraph: string[] = [];
  const flush = (): void => {
    if (paragraph.length > 0) blocks.push({ kind: 'paragraph', spans: parseInline(paragraph.join(' ')) });
    paragraph = [];
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.trim() === '') {
      flush();
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      flush();
      const code: string[] = [];
      for (i++; i < lines.length && !(lines[i] as string).trimStart().startsWith(fence[1] as string); i++) code.push(lines[i] as string);
      blocks.push({ kind: 'code', text: code.join('\n') });
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      flush();
      blocks.push({ kind: 'heading', level: (heading[1] as string).length as 1 | 2 | 3 | 4 | 5 | 6, spans: parseInline(heading[2] as string) });
      continue;
    }
    if (RULE.test(line)) {
      flush();
      blocks.push({ kind: 'rule' });
      continue;
    }
    if (TABLE_ROW.test(line) && i + 1 < lines.length && TABLE_DIVIDER.test(lines[i + 1] as string)) {
      flush();
      const rows: string[][] = [splitRow(line)];
      for (i += 2; i < lines.length && TABLE_ROW.test(lines[i] as string); i++) rows.push(splitRow(lines[i] as string));
      i--;
      blocks.push({ kind: 'table', rows });
      continue;
    }
    if (BULLET.test(line) || ORDERED.test(line)) {
      flush();
      const raw: { depth: number; marker: string; text: string }[] = [];
      for (; i < lines.length; i++) {
        const current = lines[i] as string;
        const item = BULLET.exec(current) ?? ORDERED.exec(current);
        if (item) {
          const indent = (item[1] as string).replace(/\t/g, '    ').length;
          const marker = /\d/.test(item[2] as string) ? `${item[2] as string}.` : '•';
          raw.push({ depth: Math.min(Math.floor(indent / 2), 4), marker, text: item[3] as string });
        } else if (current.trim() !== '' && /^\s+/.test(current) && raw.length > 0) {
          // An indented continuation line belongs to the item above it.
          (raw[raw.length - 1] as { text: string }).text += ` ${current.trim()}`;
        } else {
          break;
        }
      }
      const items: ListItem[] = raw.map(({ depth, marker, text }) => ({ depth, marker, spans: parseInline(text) }));
      i--;
      blocks.push({ kind: 'list', items });
      continue;
    }
    const quote = QUOTE.exec(line);
    if (quote) {
      flush();
      const text: string[] = [quote[1] as string];
      for (i++; i < lines.length && QUOTE.test(lines[i] as string); i++) text.push((QUOTE.exec(lines[i] as string) as RegExpExecArray)[1] as string);
      i--;
      blocks.push({ kind: 'quote', spans: parseInline(text.join(' ')) });
      continue;
    }
    paragraph.push(line.trim());
  }
  flush();
  return blocks;
}

function splitRow(line: string): string[] {
  return line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split(/(?<!\\)\|/)
    .map((cell) => plainText(parseInline(cell.trim().replace(/\\\|/g, '|'))));
}

const INLINE = /(`+)([\s\S]*?)\1|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|\*([^*\s][\s\S]*?)\*|\b_([^_\s][\s\S]*?)_\b|!\[([^\]]*)\]\([^)]*\)|\[([^\]]+)\]\(([^)\s]+)[^)]*\)/g;

/** Parses inline code, **bold**, *italic* / _italic_, links ("text (url)") and images (their alt text). */
export function parseInline(text: string, inherited: { bold?: boolean; italic?: boolean } = {}): InlineSpan[] {
  const spans: InlineSpan[] = [];
  const push = (span: InlineSpan): void => {
    if (span.text === '') return;
    const last = spans[spans.length - 1];
    if (last && !!last.bold === !!span.bold && !!last.italic === !!span.italic && !!last.code === !!span.code) {
      spans[spans.length - 1] = { ...last, text: last.text + span.text };
    } else {
      spans.push(span);
    }
  };
  const plain = (t: string): InlineSpan => ({ text: t, ...(inherited.bold ? { bold: true } : {}), ...(inherited.italic ? { italic: true } : {}) });
  let at = 0;
  for (const match of text.matchAll(INLINE)) {
    push(plain(text.slice(at, match.index)));
    at = match.index + match[0].length;
    const [, ticks, code, strong, strongAlt, em, emAlt, alt, linkText, href] = match;
    if (ticks !== undefined) push({ text: (code as string).trim(), code: true });
    else if (strong !== undefined || strongAlt !== undefined) parseInline((strong ?? strongAlt) as string, { ...inherited, bold: true }).forEach(push);
    else if (em !== undefined || emAlt !== undefined) parseInline((em ?? emAlt) as string, { ...inherited, italic: true }).forEach(push);
    else if (alt !== undefined) push(plain(alt));
    else if (linkText !== undefined) {
      parseInline(linkText, inherited).forEach(push);
      if (href !== linkText) push(plain(` (${href as string})`));
    }
  }
  push(plain(text.slice(at)));
  return spans;
}

/** The text of spans without emphasis. */
export function plainText(spans: readonly InlineSpan[]): string {
  return spans.map((s) => s.text).join('');
}

// Characters outside Latin-1 that the standard PDF fonts' WinAnsi encoding still has.
const WIN_ANSI_EXTRA = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');
const REPLACEMENTS: Readonly<Record<string, string>> = { '\u2212': '-', '\u2010': '-', '\u2011': '-', '\u2009': ' ', '\u2192': '->', '\u2190': '<-', '\u2264': '<=', '\u2265': '>=', '\u2260': '!=', '\u2713': 'v' };

/**
 * Text the standard PDF fonts can show: they only encode WinAnsi, and anything else would print
 * as garbage, so common symbols get ASCII stand-ins and the rest becomes "?".
 */
export function toWinAnsi(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0) as number;
    if (code === 0x09 || code === 0x0a || (code >= 0x20 && code <= 0x7e) || (code >= 0xa0 && code <= 0xff) || WIN_ANSI_EXTRA.has(ch)) out += ch;
    else out += REPLACEMENTS[ch] ?? (code < 0x20 ? '' : '?');
  }
  return out;
}
