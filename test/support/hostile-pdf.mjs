// Hostile PDFs for tests and drills (issue 28): the read_file tests
// (libs/tools/src/documents/read-file.pdf.int-spec.ts) and the drill's noisy neighbour
// (scripts/drill/noisy-neighbour-phase.mjs) build their decompression bombs with these.
import { once } from 'node:events';
import { createDeflate, deflateSync } from 'node:zlib';

/** `head`, then `unit` `times` times, then `tail`, Flate-compressed as it is made (the content of
 * a bomb is larger than a string may be). */
export async function deflateRepeated(head, unit, times, tail) {
  const z = createDeflate();
  const out = [];
  z.on('data', (chunk) => out.push(chunk));
  const ended = once(z, 'end');
  z.write(head);
  const block = Buffer.from(unit.repeat(1_000_000), 'latin1');
  for (let i = 0; i < times / 1_000_000; i++) if (!z.write(block)) await once(z, 'drain');
  z.end(tail);
  await ended;
  return Buffer.concat(out);
}

/** A one-page PDF whose page content is `content` (or already compressed), Flate-compressed. */
export function pdfWithContent(content) {
  const stream = typeof content === 'string' ? deflateSync(Buffer.from(content, 'latin1'), { level: 9 }) : content;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
    null,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  const parts = [Buffer.from('%PDF-1.4\n', 'latin1')];
  const offsets = [];
  let length = parts[0].length;
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
