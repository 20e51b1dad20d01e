import type { ToolFile } from '../tool.js';

/** Longest file name a tool accepts. */
export const MAX_FILE_NAME_LENGTH = 128;

const MEDIA_TYPES: Readonly<Record<string, string>> = {
  txt: 'text/plain',
  log: 'text/plain',
  md: 'text/markdown',
  markdown: 'text/markdown',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  json: 'application/json',
  jsonl: 'application/x-ndjson',
  ndjson: 'application/x-ndjson',
  html: 'text/html',
  htm: 'text/html',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  svg: 'image/svg+xml',
  js: 'text/javascript',
  mjs: 'text/javascript',
  ts: 'text/plain',
  py: 'text/x-python',
  sql: 'application/sql',
  css: 'text/css',
  pdf: 'application/pdf',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  bmp: 'image/bmp',
  ico: 'image/vnd.microsoft.icon',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  zip: 'application/zip',
  gz: 'application/gzip',
  parquet: 'application/vnd.apache.parquet',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  xls: 'application/vnd.ms-excel',
  doc: 'application/msword',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  mp4: 'video/mp4',
};

// Extensions whose content cannot be a JavaScript string as is: the contract carries them as base64.
const BINARY_EXTENSIONS: ReadonlySet<string> = new Set([
  'pdf',
  'png',
  'jpg',
  'jpeg',
  'gif',
  'webp',
  'bmp',
  'ico',
  'tif',
  'tiff',
  'zip',
  'gz',
  'parquet',
  'xlsx',
  'docx',
  'pptx',
  'xls',
  'doc',
  'mp3',
  'wav',
  'mp4',
]);

/** The lower-case extension of a file name without the dot, or '' when it has none. */
export function fileExtension(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot <= 0 || dot === name.length - 1 ? '' : name.slice(dot + 1).toLowerCase();
}

/** Whether a name's extension says its content is binary and therefore base64. */
export function isBinaryFileName(name: string): boolean {
  return BINARY_EXTENSIONS.has(fileExtension(name));
}

/** The media type a file name's extension implies. */
export function mediaTypeFor(name: string, encoding: ToolFile['encoding'] = 'utf8'): string {
  return MEDIA_TYPES[fileExtension(name)] ?? (encoding === 'base64' ? 'application/octet-stream' : 'text/plain');
}

/** Why `name` is not acceptable as a file name, or undefined when it is. */
export function fileNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'the file name is empty';
  if (name.length > MAX_FILE_NAME_LENGTH) return `the file name is longer than ${MAX_FILE_NAME_LENGTH} characters`;
  if (/[/\\]/.test(name)) return 'the file name may not contain path separators (/ or \\)';
  if (name.includes('..')) return 'the file name may not contain ".."';
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\u0000-\u001f\u007f<>:"|?*]/.test(name))
    return 'the file name may not contain control characters or any of < > : " | ? *';
  if (name.startsWith('.') || name.startsWith(' ') || name.endsWith(' ') || name.endsWith('.')) {
    return 'the file name may not start with a dot or a space, or end with a dot or a space';
  }
  return undefined;
}

/** Whether `text` is canonical base64 (white space allowed between groups). */
export function isBase64(text: string): boolean {
  // Without a repeated group: the regex that had one ran out of stack on files of 5 MB (issue 28).
  const compact = text.replace(/\s+/g, '');
  if (compact.length % 4 !== 0 || /[^A-Za-z0-9+/=]/.test(compact)) return false;
  const padding = compact.indexOf('=');
  return padding === -1 || (padding >= compact.length - 2 && /^=+$/.test(compact.slice(padding)));
}

/** An input file of the request (`{ name, content }`), typed by its extension: binary extensions mean base64. */
export function toolFileFromInput(input: { readonly name: string; readonly content: string }): ToolFile {
  const encoding = isBinaryFileName(input.name) ? 'base64' : 'utf8';
  return { name: input.name, content: input.content, encoding, mediaType: mediaTypeFor(input.name, encoding) };
}

/** The bytes of a file. */
export function toolFileBytes(file: ToolFile): Buffer {
  return file.encoding === 'base64' ? Buffer.from(file.content, 'base64') : Buffer.from(file.content, 'utf8');
}

/** The text of a file: utf8 as is, base64 decoded as UTF-8. */
export function toolFileText(file: ToolFile): string {
  return file.encoding === 'base64' ? Buffer.from(file.content, 'base64').toString('utf8') : file.content;
}

/** A byte count for people and models: "812 B", "12.3 KB", "1.4 MB". */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}
