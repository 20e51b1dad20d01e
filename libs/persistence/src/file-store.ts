import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { deleteInBatches } from './batched-delete.js';

/** How long generated files can be downloaded (enforced on read and by deleteExpired). */
export const FILE_RETENTION_DAYS = 7;

export interface StoredFile {
  readonly id: string;
  readonly name: string;
  readonly mediaType: string;
  /** `base64` for binary content (PDF), `utf8` for text. */
  readonly encoding: 'utf8' | 'base64';
  readonly content: string;
}

/** Files the agent generated, stored by reference and served back by the api. */
export class FileStore {
  constructor(private readonly db: DataSource) {}

  /** Stores a file. PostgreSQL's `text` refuses NUL, so a text file holding one is stored (and
   * later served) as base64 of its UTF-8 bytes; a NUL in a name becomes U+FFFD. */
  async put(projectId: string, requestId: string, file: Omit<StoredFile, 'id'>): Promise<string> {
    const id = randomUUID();
    const asBase64 = file.content.includes('\u0000');
    const encoding = asBase64 ? 'base64' : file.encoding;
    const content = asBase64 ? Buffer.from(file.content, file.encoding).toString('base64') : file.content;
    const bytes = Buffer.byteLength(content, encoding === 'base64' ? 'base64' : 'utf8');
    await this.db.query(
      `insert into generated_files (id, project_id, request_id, name, media_type, encoding, content, bytes, expires_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(days => $9))`,
      [
        id,
        projectId,
        requestId,
        file.name.replaceAll('\u0000', '\ufffd'),
        file.mediaType,
        encoding,
        content,
        bytes,
        FILE_RETENTION_DAYS,
      ],
    );
    return id;
  }

  /** A file of `projectId` that has not expired; another project's file is not found. */
  async get(id: string, projectId: string): Promise<StoredFile | undefined> {
    const rows: { id: string; name: string; media_type: string; encoding: 'utf8' | 'base64'; content: string }[] =
      await this.db.query(
        `select id, name, media_type, encoding, content from generated_files where id = $1 and project_id = $2 and expires_at > now()`,
        [id, projectId],
      );
    const row = rows[0];
    return (
      row && { id: row.id, name: row.name, mediaType: row.media_type, encoding: row.encoding, content: row.content }
    );
  }

  async deleteExpired(): Promise<number> {
    return deleteInBatches(this.db, 'generated_files', `expires_at < now()`);
  }
}
