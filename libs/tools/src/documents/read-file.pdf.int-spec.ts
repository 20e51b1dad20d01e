import { PDF_LIMITS, pdfToText } from '../text/pdf-text.util.js';
import type { ToolFile } from '../tool.js';
import { readFileTool } from './read-file.tool.js';
import { deflateRepeated, pdfWithContent } from '../../../../test/support/hostile-pdf.mjs';

const pdfFile = (name: string, bytes: Buffer): ToolFile => ({
  name,
  content: bytes.toString('base64'),
  encoding: 'base64',
  mediaType: 'application/pdf',
});
const hello = pdfFile('hello.pdf', pdfWithContent('BT /F1 12 Tf 72 712 Td (Hello there) Tj ET'));

/** Issue 28: PDF text extraction ran on the thread that runs every workflow and activity, with no
 * bound on size, time or memory. Real pdf.js (unpdf), in worker threads. */
describe('read_file on hostile PDFs', () => {
  it('reads a PDF', async () => {
    const result = await readFileTool.run({ name: 'hello.pdf' }, { inputFiles: [hello] });
    expect(result).toEqual({ ok: true, output: expect.stringContaining('--- page 1 ---\nHello there') });
  });

  // About 1 MB: one page that draws a glyph 100 million times (700 MB inflated; 158 s of pdf.js on
  // the test's own thread before, which answered nothing else meanwhile).
  it('refuses a PDF bomb', async () => {
    const bomb = pdfFile(
      'bomb.pdf',
      pdfWithContent(await deflateRepeated('BT /F1 12 Tf 72 712 Td ', '(a) Tj ', 100_000_000, 'ET')),
    );
    const result = await readFileTool.run({ name: 'bomb.pdf' }, { inputFiles: [bomb] });
    expect(result).toEqual({
      ok: false,
      error: 'bomb.pdf could not be read as a PDF: its compressed contents inflate to more than 128 MB.',
    });
  }, 60_000);

  // Under the inflation cap, but slow: 10 million glyphs (70 MB inflated, 4-5 s of pdf.js, which
  // held the calling thread all along before).
  it('reads a slow PDF off the calling thread: other work is answered meanwhile', async () => {
    const slow = pdfFile(
      'slow.pdf',
      pdfWithContent(await deflateRepeated('BT /F1 12 Tf 72 712 Td ', '(a) Tj ', 10_000_000, 'ET')),
    );
    const answered: string[] = [];
    const slowRead = readFileTool
      .run({ name: 'slow.pdf' }, { inputFiles: [slow] })
      .then((r) => (answered.push('slow'), r));
    const helloRead = readFileTool
      .run({ name: 'hello.pdf' }, { inputFiles: [hello] })
      .then((r) => (answered.push('hello'), r));
    const [slowResult, helloResult] = await Promise.all([slowRead, helloRead]);
    expect(helloResult.ok).toBe(true);
    expect(answered).toEqual(['hello', 'slow']);
    // Read, or stopped at its 10 s limit on a loaded machine (a CI run beside a soak took that
    // long once): either way it held no other work up, which is what this test is about.
    if (!slowResult.ok) expect(slowResult.error).toMatch(/reading it took more than 10 s/);
  }, 60_000);

  // Under the inflation cap, but slow: 10 million glyphs (70 MB inflated, several seconds of pdf.js).
  it('stops a reading that passes its time limit, and one that passes its memory limit', async () => {
    const slow = pdfWithContent(await deflateRepeated('BT /F1 12 Tf 72 712 Td ', '(a) Tj ', 10_000_000, 'ET'));
    await expect(pdfToText(slow, { ...PDF_LIMITS, timeoutMs: 500 })).rejects.toThrow('reading it took more than 0.5 s');
    await expect(pdfToText(slow, { ...PDF_LIMITS, maxHeapMb: 8 })).rejects.toThrow(
      'reading it needed more than 8 MB of memory',
    );
  }, 60_000);

  it('reads a 6 MB PDF (the base64 check ran out of stack from 5 MB on)', async () => {
    const padded = pdfFile(
      'padded.pdf',
      Buffer.concat([pdfWithContent('BT /F1 12 Tf 72 712 Td (Padded) Tj ET'), Buffer.alloc(6 * 1024 * 1024, 0x20)]),
    );
    const result = await readFileTool.run({ name: 'padded.pdf' }, { inputFiles: [padded] });
    expect(result).toEqual({ ok: true, output: expect.stringContaining('Padded') });
  });

  it('refuses a 100 MB PDF before parsing it', async () => {
    // It failed on the stack of the base64 check before.
    const big = pdfFile(
      'big.pdf',
      Buffer.concat([pdfWithContent('BT /F1 12 Tf 72 712 Td (Big) Tj ET'), Buffer.alloc(100 * 1024 * 1024, 0x20)]),
    );
    const result = await readFileTool.run({ name: 'big.pdf' }, { inputFiles: [big] });
    expect(result).toEqual({
      ok: false,
      error: 'big.pdf could not be read as a PDF: it is 100.0 MB; PDFs over 32.0 MB are not read.',
    });
  }, 60_000);
});
