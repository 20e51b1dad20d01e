import { defineTool } from '../tool-definition.js';
import { toolError, toolOk, type ToolDefinition } from '../tool.js';
import { MAX_FILE_NAME_LENGTH, fileNameProblem, formatBytes, isBase64, mediaTypeFor } from './tool-file.util.js';

/** Operator limits of write_file. */
export interface WriteFileOptions {
  /** Largest decoded file, in bytes (default 1 MiB). */
  readonly maxBytes?: number;
}

/** Default largest file write_file produces: 1 MiB, the contract's file size. */
export const WRITE_FILE_MAX_BYTES = 1024 * 1024;

interface WriteFileArgs {
  readonly name: string;
  readonly content: string;
  readonly encoding?: 'utf8' | 'base64';
}

/** `write_file` (files): returns a named output file; binary content is sent as base64. */
export const writeFileTool: ToolDefinition<WriteFileOptions> = defineTool<WriteFileArgs, WriteFileOptions>(
  'files',
  {
    name: 'write_file',
    description:
      'Create an output file that is returned to the user. Give a plain file name with an extension (no folders). ' +
      'Text content is written as UTF-8; for binary files (e.g. .png, .zip) send the bytes base64-encoded and set encoding to "base64". ' +
      'At most 1 MB per file. Writing the same name again replaces the earlier file.',
    parameters: {
      type: 'object',
      properties: {
        name: {
          type: 'string',
          minLength: 1,
          maxLength: MAX_FILE_NAME_LENGTH,
          description: 'File name with extension, e.g. "summary.txt".',
        },
        content: { type: 'string', description: 'The file content: text, or base64 when encoding is "base64".' },
        encoding: { type: 'string', enum: ['utf8', 'base64'], description: 'How content is encoded (default "utf8").' },
      },
      required: ['name', 'content'],
      additionalProperties: false,
    },
  },
  async (args, { options }) => {
    const maxBytes = options?.maxBytes ?? WRITE_FILE_MAX_BYTES;
    const problem = fileNameProblem(args.name);
    if (problem) return toolError(`Cannot write "${args.name}": ${problem}.`);
    const encoding = args.encoding ?? 'utf8';
    if (encoding === 'base64' && !isBase64(args.content)) {
      return toolError(`Cannot write "${args.name}": content is not valid base64 (encoding is "base64").`);
    }
    const content = encoding === 'base64' ? args.content.replace(/\s+/g, '') : args.content;
    const bytes = encoding === 'base64' ? Buffer.byteLength(content, 'base64') : Buffer.byteLength(content, 'utf8');
    if (bytes > maxBytes) {
      return toolError(
        `Cannot write "${args.name}": it is ${bytes.toLocaleString('en-US')} bytes, over the ${maxBytes.toLocaleString('en-US')}-byte limit per file.`,
      );
    }
    const mediaType = mediaTypeFor(args.name, encoding);
    return toolOk(`Wrote ${args.name} (${mediaType}, ${formatBytes(bytes)}).`, [
      { name: args.name, content, encoding, mediaType },
    ]);
  },
);
