import { convert, type HtmlToTextOptions } from 'html-to-text';

const HEADINGS = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({
  selector,
  options: { uppercase: false, leadingLineBreaks: 2, trailingLineBreaks: 1 },
}));

const OPTIONS: HtmlToTextOptions = {
  wordwrap: false,
  // Deeper nodes become "..." instead of recursing without bound on hostile markup.
  limits: { maxDepth: 300, maxInputLength: 4 * 1024 * 1024, ellipsis: '...' },
  selectors: [
    ...HEADINGS,
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true, noAnchorUrl: true } },
    { selector: 'img', format: 'skip' },
    { selector: 'svg', format: 'skip' },
    { selector: 'table', format: 'dataTable' },
  ],
};

/** Readable text of an HTML document: scripts, styles and images dropped, link targets kept in brackets. */
export function htmlToText(html: string): string {
  return convert(html, OPTIONS)
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** The document's <title>, as text, or undefined. */
export function htmlTitle(html: string): string | undefined {
  const match = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html.slice(0, 200_000));
  if (!match?.[1]) return undefined;
  const title = convert(match[1], { wordwrap: false }).replace(/\s+/g, ' ').trim();
  return title || undefined;
}
