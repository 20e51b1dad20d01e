import { createHash, randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { ServiceError } from '#libs/contracts';

/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_WINDOW_HOURS = 24;

/** A canonical JSON form (object keys sorted), so the same parsed body hashes the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export type IdempotencyClaim =
  | { readonly kind: 'new'; readonly requestId: string }
  /** The same key and body seen before: the first request's id, and its response once stored. */
  | { readonly kind: 'replay'; readonly requestId: string; readonly response: unknown };

/** Idempotency-Key bookkeeping for POST /v1/agent. */
export class IdempotencyKeys {
  constructor(private readonly db: DataSource) {}

  /** Claims `key` for this body, or finds the request that claimed it; 409 for another body. */
  async claim(projectId: string, key: string, body: unknown): Promise<IdempotencyClaim> {
    if (key.length === 0 || key.length > 255) throw new ServiceError('invalid_body', 'The Idempotency-Key header must be 1 to 255 characters.');
    const hash = createHash('sha256').update(canonicalJson(body)).digest('hex');
    const requestId = randomUUID();
    // A key older than the window is free again: the upsert takes it over.
    const rows: { request_id: string; body_hash: string; response: unknown; fresh: boolean }[] = await this.db.query(
      `insert into idempotency_keys (project_id, key, body_hash, request_id) values ($1, $2, $3, $4)
       on conflict (project_id, key) do update set body_hash = excluded.body_hash, request_id = excluded.request_id, response = null, created_at = now()
         where idempotency_keys.created_at < now() - make_interval(hours => $5)
       returning request_id, body_hash, response, (request_id = $4) as fresh`,
      [projectId, key, hash, requestId, IDEMPOTENCY_WINDOW_HOURS],
    );
    if (rows[0]?.fresh) return { kind: 'new', requestId };
    const existing: { request_id: string; body_hash: string; response: unknown }[] = await this.db.query(
      `select request_id, body_hash, response from idempotency_keys where project_id = $1 and key = $2`,
      [projectId, key],
    );
    const first = existing[0];
    if (!first) return this.claim(projectId, key, body);
    if (first.body_hash !== hash) {
      throw new ServiceError('idempotency_conflict', 'This Idempotency-Key was used in the last 24 hours with a different request body.');
    }
    return { kind: 'replay', requestId: first.request_id, response: first.response };
  }

  async saveResponse(projectId: string, key: string, requestId: string, response: unknown): Promise<void> {
    await this.db.query(`update idempotency_keys set response = $4 where project_id = $1 and key = $2 and request_id = $3 and response is null`, [
      projectId,
      key,
      requestId,
      JSON.stringify(response),
    ]);
  }
}
