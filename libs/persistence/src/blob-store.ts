import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { deleteInBatches } from './batched-delete.js';

/** How long input files and large tool outputs are kept (they only serve an agent run). */
export const BLOB_RETENTION_HOURS = 24;

/** A text another thread holds and stores itself: it runs the insert it is given, with itself as
 * the parameter at `at` (apps/api's JsonThread keeps an upload's contents off the api's heap). */
export interface HeldContent {
  /** Its UTF-8 bytes. */
  readonly bytes: number;
  insert(sql: string, params: readonly unknown[], at: number): Promise<void>;
}

/** Claim-check storage: large payloads live here and travel through Temporal as ids. */
export class BlobStore {
  constructor(private readonly db: DataSource) {}

  /** Stores `content`; `bytes`, its UTF-8 length, when the caller already counted it. */
  async put(
    projectId: string,
    name: string,
    content: string | HeldContent,
    bytes = typeof content === 'string' ? Buffer.byteLength(content, 'utf8') : content.bytes,
  ): Promise<{ id: string; bytes: number }> {
    const id = randomUUID();
    const sql = `insert into blobs (id, project_id, name, content, bytes, expires_at) values ($1, $2, $3, $4, $5, now() + make_interval(hours => $6))`;
    const params: unknown[] = [id, projectId, name, content, bytes, BLOB_RETENTION_HOURS];
    if (typeof content === 'string') await this.db.query(sql, params);
    else await content.insert(sql, params.with(3, null), 3);
    return { id, bytes };
  }

  /** A blob of `projectId`; another project's blob is not found. */
  async get(id: string, projectId: string): Promise<{ name: string; content: string } | undefined> {
    const rows: { name: string; content: string }[] = await this.db.query(
      `select name, content from blobs where id = $1 and project_id = $2`,
      [id, projectId],
    );
    return rows[0];
  }

  /** Deletes blobs stored for something that was then refused (a tool-outputs submission the
   * request did not accept): nothing of a refused request is kept. */
  async delete(ids: readonly string[], projectId: string): Promise<void> {
    if (ids.length)
      await this.db.query(`delete from blobs where id = any($1::uuid[]) and project_id = $2`, [ids, projectId]);
  }

  /** Deletes expired blobs; returns how many. */
  async deleteExpired(): Promise<number> {
    return deleteInBatches(this.db, 'blobs', `expires_at < now()`);
  }
}
