import { Lexer, type Token, type Tokens } from 'marked';
import { htmlToText } from '../text/html-text.util.js';

/**
 * Markdown as the PDF renderer lays it out: the block structure (headings, paragraphs, lists,
 * code, quotes, rules, tables) and inline emphasis. Read by marked's lexer (CommonMark, with GFM
 * tables, task lists, strikethrough and autolinks); this module only maps its tokens to the few
 * shapes the renderer draws. Pure, so the structure is unit-tested apart from the PDF bytes.
 */

/** One inline run of text with its emphasis. */
export interface InlineSpan {
  readonly text: string;
  readonly bold?: boolean;
  readonly italic?: boolean;
  readonly code?: boolean;
}

/** One list item; depth 0 is the outermost level. An empty marker continues the item above (a code block or a further paragraph in it). */
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

/** Deepest list level laid out; deeper items stay at this indent. */
const MAX_LIST_DEPTH = 4;

interface Style {
  readonly bold?: boolean;
  readonly italic?: boolean;
}

/** Reads Markdown into blocks. */
export function parseMarkdown(markdown: string): MarkdownBlock[] {
  return new Lexer({ gfm: true }).lex(markdown).flatMap(toBlocks);
}

/** Reads one line of inline Markdown: code, **bold**, *italic*, links ("text (url)") and images (their alt text). */
export function parseInline(text: string): InlineSpan[] {
  return spansOf(new Lexer({ gfm: true }).inlineTokens(text));
}

/** The text of spans without emphasis. */
export function plainText(spans: readonly InlineSpan[]): string {
  return spans.map((s) => s.text).join('');
}

function toBlocks(token: Token): MarkdownBlock[] {
  const t = token as Tokens.Generic;
  switch (token.type) {
    case 'heading':
      return [
        {
          kind: 'heading',
          level: Math.min(Math.max((t as Tokens.Heading).depth, 1), 6) as 1 | 2 | 3 | 4 | 5 | 6,
          spans: spansOf(t.tokens),
        },
      ];
    case 'paragraph':
    case 'text':
      return nonEmpty({
        kind: 'paragraph',
        spans: t.tokens ? spansOf(t.tokens) : [{ text: decodeEntities(t.text as string) }],
      });
    case 'list':
      return [{ kind: 'list', items: listItems(token as Tokens.List, 0) }];
    case 'code':
      return [{ kind: 'code', text: codeText(token as Tokens.Code) }];
    case 'blockquote':
      return nonEmpty({ kind: 'quote', spans: blockSpans((token as Tokens.Blockquote).tokens) });
    case 'hr':
      return [{ kind: 'rule' }];
    case 'table':
      return [{ kind: 'table', rows: tableRows(token as Tokens.Table) }];
    case 'html': {
      const text = htmlToText(t.text as string).trim();
      return text ? [{ kind: 'paragraph', spans: [{ text }] }] : [];
    }
    default:
      // space, def (link reference definitions): nothing to lay out.
      return [];
  }
}

function nonEmpty(block: Extract<MarkdownBlock, { spans: readonly InlineSpan[] }>): MarkdownBlock[] {
  return plainText(block.spans).trim() === '' ? [] : [block];
}

/** A list and its nested lists as items with depths; other blocks inside an item continue it. */
function listItems(list: Tokens.List, depth: number): ListItem[] {
  const items: ListItem[] = [];
  const start = typeof list.start === 'number' ? list.start : 1;
  list.items.forEach((item, i) => {
    const level = Math.min(depth, MAX_LIST_DEPTH);
    const bullet = list.ordered ? `${start + i}.` : '•';
    let marker = item.task ? (item.checked ? '[x]' : '[ ]') : bullet;
    const flush = (spans: InlineSpan[]): void => {
      if (spans.length === 0) return;
      items.push({ depth: level, marker, spans });
      marker = '';
    };
    for (const child of item.tokens) {
      if (child.type === 'checkbox') continue;
      if (child.type === 'list') {
        if (marker !== '') flush([{ text: '' }]);
        items.push(...listItems(child as Tokens.List, depth + 1));
      } else if (child.type === 'code') {
        flush([{ text: codeText(child as Tokens.Code), code: true }]);
      } else {
        flush(blockSpans([child]));
      }
    }
    if (marker !== '') flush([{ text: '' }]);
  });
  return items;
}

/** The inline content of blocks, one line each (quotes, and blocks inside list items). */
function blockSpans(tokens: readonly Token[]): InlineSpan[] {
  const spans: InlineSpan[] = [];
  for (const token of tokens) {
    const t = token as Tokens.Generic;
    let line: InlineSpan[];
    if (token.type === 'space' || token.type === 'hr' || token.type === 'def') continue;
    if (token.type === 'list') line = listLines(token as Tokens.List);
    else if (token.type === 'code') line = [{ text: codeText(token as Tokens.Code), code: true }];
    else if (token.type === 'table')
      line = [
        {
          text: tableRows(token as Tokens.Table)
            .map((row) => row.join(' | '))
            .join('\n'),
        },
      ];
    else if (token.type === 'html') line = [{ text: htmlToText(t.text as string).trim() }];
    else line = t.tokens ? spansOf(t.tokens) : [{ text: decodeEntities(String(t.text ?? '')) }];
    if (spans.length > 0 && line.length > 0) spans.push({ text: '\n' });
    spans.push(...line);
  }
  return merge(spans);
}

/** A table's header and rows as the text of their cells. */
function tableRows(table: Tokens.Table): string[][] {
  const cells = (row: readonly Tokens.TableCell[]): string[] => row.map((cell) => plainText(spansOf(cell.tokens)));
  return [cells(table.header), ...table.rows.map(cells)];
}

/** A list inside a quote: one line per item, indented by depth. */
function listLines(list: Tokens.List): InlineSpan[] {
  return listItems(list, 0).flatMap((item, i) => [
    ...(i > 0 ? [{ text: '\n' }] : []),
    { text: `${'  '.repeat(item.depth)}${item.marker} ` },
    ...item.spans,
  ]);
}

function codeText(code: Tokens.Code): string {
  return code.text.replace(/\n+$/, '');
}

/** Inline tokens as spans; adjacent spans of the same style are merged. */
function spansOf(tokens: readonly Token[] | undefined, style: Style = {}): InlineSpan[] {
  const spans: InlineSpan[] = [];
  const plain = (text: string): InlineSpan => ({
    text,
    ...(style.bold ? { bold: true } : {}),
    ...(style.italic ? { italic: true } : {}),
  });
  for (const token of tokens ?? []) {
    const t = token as Tokens.Generic;
    switch (token.type) {
      case 'text':
        if (t.tokens) spans.push(...spansOf(t.tokens, style));
        // A soft line break is a space; a hard one (`br`) is a new line.
        else spans.push(plain(decodeEntities(t.text as string).replace(/\n/g, ' ')));
        break;
      case 'escape':
        spans.push(plain(t.text as string));
        break;
      case 'strong':
        spans.push(...spansOf(t.tokens, { ...style, bold: true }));
        break;
      case 'em':
        spans.push(...spansOf(t.tokens, { ...style, italic: true }));
        break;
      case 'del':
        spans.push(...spansOf(t.tokens, style));
        break;
      case 'codespan':
        spans.push({ text: t.text as string, code: true });
        break;
      case 'br':
        spans.push(plain('\n'));
        break;
      case 'link': {
        const inner = spansOf(t.tokens, style);
        spans.push(...inner);
        const href = (token as Tokens.Link).href;
        const shown = plainText(inner);
        if (href !== shown && href !== `mailto:${shown}`) spans.push(plain(` (${href})`));
        break;
      }
      case 'image':
        spans.push(plain(decodeEntities((token as Tokens.Image).text)));
        break;
      case 'html':
      case 'checkbox':
        // Inline HTML tags are dropped; their text comes as text tokens.
        break;
      default:
        if (t.tokens) spans.push(...spansOf(t.tokens, style));
        else if (typeof t.text === 'string') spans.push(plain(t.text));
    }
  }
  return merge(spans);
}

function merge(spans: readonly InlineSpan[]): InlineSpan[] {
  const merged: InlineSpan[] = [];
  for (const span of spans) {
    if (span.text === '') continue;
    const last = merged[merged.length - 1];
    if (last && !!last.bold === !!span.bold && !!last.italic === !!span.italic && !!last.code === !!span.code)
      merged[merged.length - 1] = { ...last, text: last.text + span.text };
    else merged.push(span);
  }
  return merged;
}

// The entities a model writes; the lexer leaves them as they are in text.
const NAMED_ENTITIES: Readonly<Record<string, string>> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
  copy: '©',
  reg: '®',
  trade: '™',
  hellip: '…',
  mdash: '—',
  ndash: '–',
  lsquo: '‘',
  rsquo: '’',
  ldquo: '“',
  rdquo: '”',
  laquo: '«',
  raquo: '»',
  euro: '€',
  pound: '£',
  yen: '¥',
  cent: '¢',
  deg: '°',
  times: '×',
  divide: '÷',
  plusmn: '±',
  middot: '·',
  bull: '•',
  sect: '§',
  para: '¶',
  shy: '\u00ad',
};

function decodeEntities(text: string): string {
  return text.replace(/&(#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});/g, (entity, body: string) => {
    if (body.startsWith('#')) {
      const code =
        body[1] === 'x' || body[1] === 'X' ? Number.parseInt(body.slice(2), 16) : Number.parseInt(body.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
        ? String.fromCodePoint(code)
        : '\ufffd';
    }
    return NAMED_ENTITIES[body] ?? entity;
  });
}

// Characters outside Latin-1 that the standard PDF fonts' WinAnsi encoding still has.
const WIN_ANSI_EXTRA = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');
const REPLACEMENTS: Readonly<Record<string, string>> = {
  '\u2212': '-',
  '\u2010': '-',
  '\u2011': '-',
  '\u2009': ' ',
  '\u2192': '->',
  '\u2190': '<-',
  '\u2264': '<=',
  '\u2265': '>=',
  '\u2260': '!=',
  '\u2713': 'v',
};

/**
 * Text the standard PDF fonts can show: they only encode WinAnsi, and anything else would print
 * as garbage, so common symbols get ASCII stand-ins and the rest becomes "?".
 */
export function toWinAnsi(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0) as number;
    if (
      code === 0x09 ||
      code === 0x0a ||
      (code >= 0x20 && code <= 0x7e) ||
      (code >= 0xa0 && code <= 0xff) ||
      WIN_ANSI_EXTRA.has(ch)
    )
      out += ch;
    else out += REPLACEMENTS[ch] ?? (code < 0x20 ? '' : '?');
  }
  return out;
}
