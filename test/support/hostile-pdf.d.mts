/** Types of hostile-pdf.mjs. */
/** `head`, then `unit` `times` times, then `tail`, Flate-compressed as it is made. */
export function deflateRepeated(head: string, unit: string, times: number, tail: string): Promise<Buffer>;
/** A one-page PDF whose page content is `content` (or already compressed), Flate-compressed. */
export function pdfWithContent(content: string | Buffer): Buffer;
