import { findInputFile } from '../files/input-files.util.js';
import { fileExtension, formatBytes, isBase64, toolFileBytes, toolFileText } from '../files/tool-file.util.js';
import { htmlToText } from '../text/html-text.util.js';
import { PDF_LIMITS, pdfToText } from '../text/pdf-text.util.js';
import { defineTool } from '../tool-definition.js';
import { errorMessage, toolError, toolOk, type ToolDefinition, type ToolFile, type ToolResult } from '../tool.js';

/** Operator limits of read_file. */
export interface ReadFileOptions {
  /** Characters returned per call (default 100,000); the model continues with `offset`. */
  readonly maxOutputChars?: number;
}

/** Defaults of read_file. */
export const READ_FILE_DEFAULTS = { maxOutputChars: 100_000 } as const;

const TEXT_EXTENSIONS = new Set([
  '',
  'txt',
  'text',
  'md',
  'markdown',
  'csv',
  'tsv',
  'json',
  'jsonl',
  'ndjson',
  'xml',
  'yaml',
  'yml',
  'log',
  'js',
  'mjs',
  'ts',
  'py',
  'sql',
  'css',
  'ini',
  'toml',
  'svg',
]);

interface ReadFileArgs {
  readonly name: string;
  readonly offset?: number;
}

/** `read_file` (documents): the text of one input file (plain text, Markdown, CSV, JSON, HTML as text, PDF text). */
export const readFileTool: ToolDefinition<ReadFileOptions> = defineTool<ReadFileArgs, ReadFileOptions>(
  'documents',
  {
    name: 'read_file',
    description:
      "Read one of the request's input files by name: plain text, Markdown, CSV, JSON and HTML (converted to text), and the " +
      'text of PDFs. Long files come in parts of 100,000 characters: call again with the given offset to continue.',
    parameters: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 256, description: 'The input file name, exactly as listed.' },
        offset: { type: 'integer', minimum: 0, description: 'Character offset to start from (default 0).' },
      },
      required: ['name'],
      additionalProperties: false,
    },
  },
  async (args, { inputFiles = [], options }) => {
    const file = findInputFile(inputFiles, args.name);
    if (!file) {
      const available = inputFiles.map((f) => f.name).join(', ');
      return toolError(
        `There is no input file named "${args.name}". ${available ? `Input files: ${available}.` : 'The request has no input files.'}`,
      );
    }
    const extracted = await extractText(file);
    if (!extracted.ok) return extracted;
    const maxChars = options?.maxOutputChars ?? READ_FILE_DEFAULTS.maxOutputChars;
    const offset = args.offset ?? 0;
    const { text, details } = extracted;
    if (offset > 0 && offset >= text.length) {
      return toolError(`Offset ${offset} is past the end of ${file.name} (${text.length} characters of text).`);
    }
    const end = Math.min(text.length, offset + maxChars);
    const range = offset > 0 || end < text.length ? `, characters ${offset}-${end} of ${text.length}` : '';
    const header = `File: ${file.name} (${file.mediaType}, ${formatBytes(toolFileBytes(file).length)}${details}${range})`;
    const more =
      end < text.length
        ? `\n[truncated: ${text.length - end} more characters; call read_file with offset ${end} to continue]`
        : '';
    return toolOk(`${header}\n\n${text.slice(offset, end)}${more}`);
  },
);

async function extractText(
  file: ToolFile,
): Promise<{ ok: true; text: string; details: string } | Extract<ToolResult, { ok: false }>> {
  const ext = fileExtension(file.name);
  if (ext === 'pdf') {
    // The size is checked on the base64 text, before anything scans or decodes it.
    const size = Math.floor((file.content.length * 3) / 4);
    if (size > PDF_LIMITS.maxBytes) {
      return {
        ok: false,
        error: `${file.name} could not be read as a PDF: it is ${formatBytes(size)}; PDFs over ${formatBytes(PDF_LIMITS.maxBytes)} are not read.`,
      };
    }
    if (file.encoding !== 'base64' || !isBase64(file.content)) {
      return { ok: false, error: `${file.name} must be sent base64-encoded to be read as a PDF.` };
    }
    try {
      const pdf = await pdfToText(toolFileBytes(file));
      return { ok: true, text: pdf.text, details: `, ${pdf.pages} ${pdf.pages === 1 ? 'page' : 'pages'}` };
    } catch (e) {
      return { ok: false, error: `${file.name} could not be read as a PDF: ${errorMessage(e)}.` };
    }
  }
  if (ext === 'html' || ext === 'htm' || file.mediaType === 'text/html') {
    return { ok: true, text: htmlToText(toolFileText(file)), details: ', converted from HTML' };
  }
  const textual =
    TEXT_EXTENSIONS.has(ext) || file.mediaType.startsWith('text/') || file.mediaType === 'application/json';
  if (!textual) {
    return {
      ok: false,
      error: `${file.name} is a binary file (${file.mediaType}); read_file reads text, Markdown, CSV, JSON, HTML and PDF files.`,
    };
  }
  return { ok: true, text: toolFileText(file), details: '' };
}
