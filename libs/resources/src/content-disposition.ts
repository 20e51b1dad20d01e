// RFC 5987 attr-char: what may stand unencoded in `filename*`.
const ATTR_CHAR = /^[A-Za-z0-9!#$&+.^_`|~-]$/;

/**
 * `attachment` with the file's name as RFC 6266 asks: `filename*=UTF-8''…` carries any name
 * exactly (percent-encoded UTF-8 bytes; an unpaired surrogate becomes U+FFFD, as it was stored),
 * and `filename="…"` is the fallback for clients without RFC 5987: printable ASCII, anything else
 * (and `"`, `\`, `%`) one `_` per character. The header value itself is always ASCII, which Node
 * requires.
 */
export function contentDisposition(name: string): string {
  const fallback = [...name]
    .map((c) => (c >= ' ' && c <= '~' && c !== '"' && c !== '\\' && c !== '%' ? c : '_'))
    .join('');
  const encoded = [...Buffer.from(name, 'utf8')]
    .map((byte) => {
      const c = String.fromCharCode(byte);
      return ATTR_CHAR.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/** What a download of a generated file answers (the api's GET /v1/files/{id} and the console's
 * link): its bytes, its media type (text with its charset) and the attachment header. */
export function fileDownload(file: {
  readonly name: string;
  readonly mediaType: string;
  readonly encoding: 'utf8' | 'base64';
  readonly content: string;
}): { body: Buffer; headers: Record<string, string> } {
  return {
    body: Buffer.from(file.content, file.encoding === 'base64' ? 'base64' : 'utf8'),
    headers: {
      'Content-Type':
        file.encoding === 'utf8' && !file.mediaType.includes('charset')
          ? `${file.mediaType}; charset=utf-8`
          : file.mediaType,
      'Content-Disposition': contentDisposition(file.name),
    },
  };
}
