import { once } from 'node:events';
import { createDeflate, deflateSync } from 'node:zlib';
import { PDF_LIMITS, pdfToText } from '../text/pdf-text.util.js';
import type { ToolFile } from '../tool.js';
import { readFileTool } from './read-file.tool.js';

/** `head`, then `unit` `times` times, then `tail`, Flate-compressed as it is made (the content of
 * a bomb is larger than a string may be). */
async function deflateRepeated(head: string, unit: string, times: number, tail: string): Promise<Buffer> {
  const z = createDeflate();
  const out: Buffer[] = [];
  z.on('data', (chunk: Buffer) => out.push(chunk));
  const ended = once(z, 'end');
  z.write(head);
  const block = Buffer.from(unit.repeat(1_000_000), 'latin1');
  for (let i = 0; i < times / 1_000_000; i++) if (!z.write(block)) await once(z, 'drain');
  z.end(tail);
  await ended;
  return Buffer.concat(out);
}

/** A one-page PDF whose page content is `content` (or already compressed), Flate-compressed. */
function pdfWithContent(content: string | Buffer): Buffer {
  const stream = typeof content === 'string' ? deflateSync(Buffer.from(content, 'latin1'), { level: 9 }) : content;
  const objects: (string | null)[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
    null,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  const parts = [Buffer.from('%PDF-1.4\n', 'latin1')];
  const offsets: number[] = [];
  let length = parts[0]!.length;
  objects.forEach((body, i) => {
    offsets.push(length);
    const chunk =
      body === null
        ? Buffer.concat([
            Buffer.from(`${i + 1} 0 obj\n<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`, 'latin1'),
            stream,
            Buffer.from('\nendstream\nendobj\n', 'latin1'),
          ])
        : Buffer.from(`${i + 1} 0 obj\n${body}\nendobj\n`, 'latin1');
    parts.push(chunk);
    length += chunk.length;
  });
  const entries = offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  parts.push(
    Buffer.from(
      `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${entries}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`,
      'latin1',
    ),
  );
  return Buffer.concat(parts);
}

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
    expect([slowResult.ok, helloResult.ok]).toEqual([true, true]);
    expect(answered).toEqual(['hello', 'slow']);
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
