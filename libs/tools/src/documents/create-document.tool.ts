import { MAX_FILE_NAME_LENGTH, fileExtension, fileNameProblem, formatBytes } from '../files/tool-file.util.js';
import { defineTool } from '../tool-definition.js';
import { toolError, toolOk, type ToolDefinition } from '../tool.js';

/** Operator limits of create_document. */
export interface CreateDocumentOptions {
  /** Largest document produced, in bytes (default 5 MiB). */
  readonly maxBytes?: number;
}

/** Defaults of create_document's limits. */
export const CREATE_DOCUMENT_DEFAULTS = { maxContentChars: 200_000, maxBytes: 5 * 1024 * 1024 } as const;

interface CreateDocumentArgs {
  readonly name: string;
  readonly content: string;
  readonly title?: string;
}

/** `create_document` (documents): writes Markdown as a `.md` file or renders it to a `.pdf` (base64). */
export const createDocumentTool: ToolDefinition<CreateDocumentOptions> = defineTool<
  CreateDocumentArgs,
  CreateDocumentOptions
>(
  'documents',
  {
    name: 'create_document',
    description:
      'Create a document returned to the user. Write the content in Markdown (headings, paragraphs, bullet and numbered ' +
      'lists, **bold**, *italic*, `code`, code blocks, tables). A name ending in .md keeps the Markdown as is; a name ending ' +
      'in .pdf renders it to PDF (standard fonts: Latin characters only).',
    parameters: {
      type: 'object',
      properties: {
        name: {
          type: 'string',
          minLength: 4,
          maxLength: MAX_FILE_NAME_LENGTH,
          pattern: '\\.(md|pdf)$',
          description: 'File name ending in .md or .pdf, e.g. "report.pdf".',
        },
        content: {
          type: 'string',
          minLength: 1,
          maxLength: CREATE_DOCUMENT_DEFAULTS.maxContentChars,
          description: 'The document in Markdown.',
        },
        title: {
          type: 'string',
          maxLength: 200,
          description: 'Optional document title (shown as the first heading and in the PDF metadata).',
        },
      },
      required: ['name', 'content'],
      additionalProperties: false,
    },
  },
  async (args, { options }) => {
    const problem = fileNameProblem(args.name);
    if (problem) return toolError(`Cannot create "${args.name}": ${problem}.`);
    const maxBytes = options?.maxBytes ?? CREATE_DOCUMENT_DEFAULTS.maxBytes;
    const title = args.title?.trim() || undefined;

    if (fileExtension(args.name) === 'md') {
      const content =
        title && !args.content.trimStart().startsWith('# ') ? `# ${title}\n\n${args.content}` : args.content;
      const bytes = Buffer.byteLength(content, 'utf8');
      if (bytes > maxBytes)
        return toolError(
          `Cannot create "${args.name}": it would be ${bytes.toLocaleString('en-US')} bytes, over the ${maxBytes.toLocaleString('en-US')}-byte limit.`,
        );
      return toolOk(`Created ${args.name} (text/markdown, ${formatBytes(bytes)}).`, [
        { name: args.name, content, encoding: 'utf8', mediaType: 'text/markdown' },
      ]);
    }

    // pdfkit (and its fonts) load on the first PDF, not in every worker at start.
    const { renderMarkdownPdf } = await import('./pdf.renderer.js');
    const pdf = await renderMarkdownPdf(args.content, title);
    if (pdf.bytes.length > maxBytes) {
      return toolError(
        `Cannot create "${args.name}": the PDF would be ${pdf.bytes.length.toLocaleString('en-US')} bytes, over the ${maxBytes.toLocaleString('en-US')}-byte limit.`,
      );
    }
    return toolOk(
      `Created ${args.name} (application/pdf, ${pdf.pages} ${pdf.pages === 1 ? 'page' : 'pages'}, ${formatBytes(pdf.bytes.length)}).`,
      [{ name: args.name, content: pdf.bytes.toString('base64'), encoding: 'base64', mediaType: 'application/pdf' }],
    );
  },
);
