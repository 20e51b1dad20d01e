// The worker thread that reads a PDF's text (pdf-text.util.ts starts one per PDF, with memory and
// time limits). Self-contained: no import of the service's modules, and only TypeScript that
// Node can strip, so that the same file runs from dist/ (compiled) and from the sources (tests).
import { parentPort, workerData } from 'node:worker_threads';
import { constants, inflateSync } from 'node:zlib';

interface Job {
  readonly bytes: Uint8Array;
  readonly maxPages: number;
  readonly maxInflatedBytes: number;
}

const { bytes, maxPages, maxInflatedBytes } = workerData as Job;

/** Whether the file's compressed streams, inflated, stay within `budget` bytes in all. pdf.js
 * inflates a stream whole, outside the thread's heap limit (a 1 MB page can hold 700 MB of
 * drawing commands), so the streams are inflated here first, each with a cap on its output. */
function inflatesWithin(pdf: Buffer, budget: number): boolean {
  let left = budget;
  for (let at = pdf.indexOf('stream', 0, 'latin1'); at >= 0; at = pdf.indexOf('stream', at + 6, 'latin1')) {
    if (pdf[at - 1] === 0x64 /* d of endstream */) continue;
    let start = at + 6;
    if (pdf[start] === 0x0d) start++;
    if (pdf[start] !== 0x0a) continue;
    start++;
    const end = pdf.indexOf('endstream', start, 'latin1');
    if (end < 0) break;
    let inflated: Buffer;
    try {
      inflated = inflateSync(pdf.subarray(start, end), {
        maxOutputLength: Math.max(left, 1),
        finishFlush: constants.Z_SYNC_FLUSH,
      });
    } catch (e) {
      if ((e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') return false;
      continue; // not Flate, or damaged: pdf.js decides
    }
    left -= inflated.length;
    if (left < 0) return false;
    at = end;
  }
  return true;
}

if (!inflatesWithin(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), maxInflatedBytes)) {
  parentPort?.postMessage({
    refused: `its compressed contents inflate to more than ${Math.round(maxInflatedBytes / 1024 / 1024)} MB`,
  });
  process.exit(0);
}
// unpdf (pdf.js) is loaded here only, never on the thread that runs the workflows and activities.
const { extractText, getDocumentProxy } = await import('unpdf');
// No font loading (text only), and no warnings about damaged files on the worker's console.
const document = await getDocumentProxy(bytes, { verbosity: 0, disableFontFace: true });
try {
  if (document.numPages > maxPages) {
    parentPort?.postMessage({ refused: `it has ${document.numPages} pages; at most ${maxPages} are read` });
  } else {
    const { totalPages, text } = await extractText(document, { mergePages: false });
    const body = text.map((page, i) => `--- page ${i + 1} ---\n${page.trim()}`).join('\n\n');
    parentPort?.postMessage({ pages: totalPages, text: body });
  }
} finally {
  await document.cleanup();
}
