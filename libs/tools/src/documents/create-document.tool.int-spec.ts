import type { ToolFile, ToolResult } from '../tool.js';
import { createDocumentTool } from './create-document.tool.js';
import { readFileTool } from './read-file.tool.js';

const MARKDOWN = [
  '# Quarterly report',
  '',
  'Revenue grew **12%** over the quarter, driven by *new* customers.',
  '',
  '## Highlights',
  '',
  '- North region up',
  '  - Oslo best city',
  '- South region flat',
  '',
  '1. Hire two engineers',
  '2. Open the Bergen office',
  '',
  '```',
  'total = sum(sales)',
  '```',
  '',
  '| Region | Sales |',
  '|---|---|',
  '| North | 10 |',
  '',
  'Prices in € and “quotes” survive; 中文 does not.',
].join('\n');

function fileOf(result: ToolResult): ToolFile {
  if (!result.ok) throw new Error(`expected a document, got: ${result.error}`);
  const file = result.files?.[0];
  if (!file) throw new Error('expected a file');
  return file;
}

describe('create_document', () => {
  it('keeps Markdown as it is', async () => {
    await expect(createDocumentTool.run({ name: 'notes.md', content: 'Body text.', title: 'Notes' })).resolves.toEqual({
      ok: true,
      output: 'Created notes.md (text/markdown, 19 B).',
      files: [{ name: 'notes.md', content: '# Notes\n\nBody text.', encoding: 'utf8', mediaType: 'text/markdown' }],
    });
  });

  it('renders Markdown to a PDF whose text reads back in order', async () => {
    const result = await createDocumentTool.run({ name: 'report.pdf', content: MARKDOWN, title: 'Quarterly report' });
    expect(result.ok && result.output).toMatch(/^Created report\.pdf \(application\/pdf, 1 page, [\d.]+ KB\)\.$/);
    const file = fileOf(result);
    expect(file).toMatchObject({ name: 'report.pdf', encoding: 'base64', mediaType: 'application/pdf' });
    expect(Buffer.from(file.content, 'base64').subarray(0, 5).toString('latin1')).toBe('%PDF-');

    const read = await readFileTool.run({ name: 'report.pdf' }, { inputFiles: [file] });
    expect(read.ok).toBe(true);
    const text = read.ok ? read.output : '';
    expect(text).toMatch(/^File: report\.pdf \(application\/pdf, [\d.]+ KB, 1 page\)\n\n--- page 1 ---\n/);
    const expectedInOrder = [
      'Quarterly report',
      'Revenue grew 12% over the quarter, driven by new customers.',
      'Highlights',
      'North region up',
      'Oslo best city',
      'South region flat',
      '1.',
      'Hire two engineers',
      'Open the Bergen office',
      'total = sum(sales)',
      'Region | Sales',
      'North | 10',
      'Prices in € and “quotes” survive; ?? does not.',
    ];
    let at = 0;
    for (const piece of expectedInOrder) {
      const found = text.indexOf(piece, at);
      expect({ piece, found: found >= 0 }).toEqual({ piece, found: true });
      at = found + piece.length;
    }
    // The title is the first heading already, so it is not printed twice.
    expect(text.split('Quarterly report').length - 1).toBe(1);
  });

  it('lays out richer Markdown: nested lists, links, code fences in list items, task items, quotes and entities', async () => {
    const markdown = [
      '# Launch plan',
      '',
      'See the [runbook](https://runbook.example/launch) and https://status.example.',
      '',
      '1. Prepare',
      '   - Freeze the *schema*',
      '     - Tag `v2.0`',
      '2. Deploy:',
      '',
      '   ```sh',
      '   npm run deploy -- --prod',
      '   ```',
      '',
      '- [x] Announce',
      '- [ ] Celebrate',
      '',
      '> Rollback is **one** command:',
      '> - `npm run rollback`',
      '',
      'Costs &lt; 5 &euro; per day.',
    ].join('\n');
    const result = await createDocumentTool.run({ name: 'plan.pdf', content: markdown });
    const read = await readFileTool.run({ name: 'plan.pdf' }, { inputFiles: [fileOf(result)] });
    const text = read.ok ? read.output : '';
    const expectedInOrder = [
      'Launch plan',
      'See the runbook (https://runbook.example/launch) and https://status.example.',
      '1.',
      'Prepare',
      'Freeze the schema',
      'Tag v2.0',
      '2.',
      'Deploy:',
      'npm run deploy -- --prod',
      '[x]',
      'Announce',
      '[ ]',
      'Celebrate',
      'Rollback is one command:',
      'npm run rollback',
      'Costs < 5 € per day.',
    ];
    let at = 0;
    for (const piece of expectedInOrder) {
      const found = text.indexOf(piece, at);
      expect({ piece, found: found >= 0 }).toEqual({ piece, found: true });
      at = found + piece.length;
    }
    expect(text).not.toContain('```');
    expect(text).not.toContain('&lt;');
  });

  it('grows to several pages for a long document', async () => {
    const long = Array.from(
      { length: 120 },
      (_, i) => `Paragraph ${i + 1} with enough words to take a line or two in the PDF.`,
    ).join('\n\n');
    const result = await createDocumentTool.run({ name: 'long.pdf', content: long });
    expect(result.ok && result.output).toMatch(/^Created long\.pdf \(application\/pdf, [3-9] pages, /);
    const read = await readFileTool.run({ name: 'long.pdf' }, { inputFiles: [fileOf(result)] });
    expect(read.ok && read.output).toContain('Paragraph 120 with enough words');
  });

  it('refuses other formats, bad names and documents over the size limit', async () => {
    await expect(createDocumentTool.run({ name: 'report.docx', content: 'x' })).resolves.toEqual({
      ok: false,
      error: 'Invalid arguments for create_document: arguments.name must match pattern "\\.(md|pdf)$".',
    });
    await expect(createDocumentTool.run({ name: '../report.pdf', content: 'x' })).resolves.toEqual({
      ok: false,
      error: 'Cannot create "../report.pdf": the file name may not contain path separators (/ or \\).',
    });
    const result = await createDocumentTool.run({ name: 'big.pdf', content: 'x' }, { options: { maxBytes: 100 } });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toMatch(
      /^Cannot create "big\.pdf": the PDF would be [\d,]+ bytes, over the 100-byte limit\.$/,
    );
  });
});

describe('read_file on PDFs', () => {
  it('refuses a base64 file that is not a PDF', async () => {
    const file: ToolFile = {
      name: 'broken.pdf',
      content: Buffer.from('hello').toString('base64'),
      encoding: 'base64',
      mediaType: 'application/pdf',
    };
    const result = await readFileTool.run({ name: 'broken.pdf' }, { inputFiles: [file] });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toMatch(/^broken\.pdf could not be read as a PDF: .+\.$/);
  });
});
