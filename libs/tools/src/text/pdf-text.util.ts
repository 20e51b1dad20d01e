/** The text of a PDF, page by page, with "--- page N ---" separators. */
export async function pdfToText(bytes: Uint8Array): Promise<{ pages: number; text: string }> {
  // unpdf (pdf.js) is loaded on first use, not with the worker.
  const { extractText, getDocumentProxy } = await import('unpdf');
  // A copy, because pdf.js may detach the buffer it is given; no font loading (text only), and no
  // warnings about damaged files on the worker's console.
  const document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0, disableFontFace: true });
  try {
    const { totalPages, text } = await extractText(document, { mergePages: false });
    const body = text.map((page, i) => `--- page ${i + 1} ---\n${page.trim()}`).join('\n\n');
    return { pages: totalPages, text: body };
  } finally {
    await document.cleanup();
  }
}
