import PDFDocument from 'pdfkit';
import { parseMarkdown, plainText, toWinAnsi, type InlineSpan, type MarkdownBlock } from './markdown.parser.js';

const MARGIN = 56;
const BODY_SIZE = 11;
const HEADING_SIZES = [20, 16, 14, 12, 11, 11] as const;
const INDENT = 16;

/** Renders Markdown to a PDF (A4, standard fonts); returns the bytes and the page count. */
export async function renderMarkdownPdf(markdown: string, title?: string): Promise<{ bytes: Buffer; pages: number }> {
  const doc = new PDFDocument({
    size: 'A4',
    margin: MARGIN,
    info: { Title: toWinAnsi(title ?? ''), Creator: 'managed-agent-service create_document' },
  });
  const chunks: Buffer[] = [];
  let pages = 1;
  doc.on('data', (chunk: Buffer) => chunks.push(chunk));
  doc.on('pageAdded', () => {
    pages += 1;
  });
  const finished = new Promise<void>((resolve, reject) => {
    doc.on('end', () => resolve());
    doc.on('error', reject);
  });

  const blocks = parseMarkdown(markdown);
  const first = blocks[0];
  const titleIsHeading =
    first?.kind === 'heading' && first.level === 1 && plainText(first.spans).trim() === title?.trim();
  if (title && !titleIsHeading) renderBlock(doc, { kind: 'heading', level: 1, spans: [{ text: title }] });
  for (const block of blocks) renderBlock(doc, block);
  doc.end();
  await finished;
  return { bytes: Buffer.concat(chunks), pages };
}

function contentWidth(doc: PDFKit.PDFDocument): number {
  return doc.page.width - doc.page.margins.left - doc.page.margins.right;
}

function fontFor(span: InlineSpan): string {
  if (span.code) return 'Courier';
  if (span.bold && span.italic) return 'Helvetica-BoldOblique';
  if (span.bold) return 'Helvetica-Bold';
  if (span.italic) return 'Helvetica-Oblique';
  return 'Helvetica';
}

/** Writes spans as one flowing paragraph starting at (x, y) with the given width. */
function writeSpans(
  doc: PDFKit.PDFDocument,
  spans: readonly InlineSpan[],
  x: number,
  width: number,
  size: number,
  force?: Partial<InlineSpan>,
): void {
  const runs = spans.filter((s) => s.text !== '');
  if (runs.length === 0) return;
  runs.forEach((span, i) => {
    const styled = { ...span, ...force };
    doc.font(fontFor(styled)).fontSize(styled.code && !force?.code ? size - 1 : size);
    const options: PDFKit.Mixins.TextOptions = { width, continued: i < runs.length - 1, lineGap: 2 };
    if (i === 0) doc.text(toWinAnsi(span.text), x, doc.y, options);
    else doc.text(toWinAnsi(span.text), options);
  });
}

function renderBlock(doc: PDFKit.PDFDocument, block: MarkdownBlock): void {
  const left = doc.page.margins.left;
  const width = contentWidth(doc);
  switch (block.kind) {
    case 'heading': {
      doc.moveDown(block.level <= 2 ? 0.8 : 0.5);
      writeSpans(doc, block.spans, left, width, HEADING_SIZES[block.level - 1], { bold: true });
      doc.moveDown(0.3);
      break;
    }
    case 'paragraph': {
      writeSpans(doc, block.spans, left, width, BODY_SIZE);
      doc.moveDown(0.6);
      break;
    }
    case 'quote': {
      doc.fillColor('#555555');
      writeSpans(doc, block.spans, left + INDENT, width - INDENT, BODY_SIZE, { italic: true });
      doc.fillColor('black');
      doc.moveDown(0.6);
      break;
    }
    case 'list': {
      for (const item of block.items) {
        const x = left + item.depth * INDENT;
        const y = doc.y;
        doc
          .font('Helvetica')
          .fontSize(BODY_SIZE)
          .text(item.marker, x, y, { width: INDENT + 8, lineBreak: false });
        // The marker sits in the gutter; the item's text wraps with a hanging indent beside it.
        doc.y = y;
        writeSpans(
          doc,
          item.spans,
          x + INDENT + (item.marker.length > 2 ? 8 : 0),
          width - (x - left) - INDENT - 8,
          BODY_SIZE,
        );
        doc.moveDown(0.15);
      }
      doc.moveDown(0.45);
      break;
    }
    case 'code': {
      doc.font('Courier').fontSize(9.5).fillColor('#222222');
      doc.text(toWinAnsi(block.text), left + 8, doc.y, { width: width - 8, lineGap: 1 });
      doc.fillColor('black');
      doc.moveDown(0.6);
      break;
    }
    case 'rule': {
      const y = doc.y + 4;
      doc
        .moveTo(left, y)
        .lineTo(left + width, y)
        .lineWidth(0.5)
        .strokeColor('#999999')
        .stroke();
      doc.strokeColor('black');
      doc.y = y + 8;
      break;
    }
    case 'table': {
      const columns = Math.max(...block.rows.map((r) => r.length));
      const widths = Array.from({ length: columns }, (_, c) =>
        Math.min(40, Math.max(...block.rows.map((r) => (r[c] ?? '').length))),
      );
      const lines = block.rows.map((row) => widths.map((w, c) => fit(row[c] ?? '', w)).join(' | '));
      lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('-+-'));
      doc
        .font('Courier')
        .fontSize(8.5)
        .text(toWinAnsi(lines.join('\n')), left, doc.y, { width, lineGap: 1 });
      doc.moveDown(0.6);
      break;
    }
  }
}

function fit(text: string, width: number): string {
  return text.length > width ? `${text.slice(0, width - 1)}…` : text.padEnd(width);
}
