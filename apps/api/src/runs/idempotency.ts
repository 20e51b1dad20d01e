import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { ServiceError } from '#libs/contracts';
import { bodyHash } from '../json-off-thread.js';

/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_WINDOW_HOURS = 24;
/** The longest Idempotency-Key taken. */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/** Whether the text has a C0 or C1 control character, or DEL. */
const hasControl = (text: string): boolean =>
  [...text].some((c) => c.charCodeAt(0) < 0x20 || (c.charCodeAt(0) >= 0x7f && c.charCodeAt(0) <= 0x9f));

/** The Idempotency-Key header, or undefined when absent; an empty one, one over 255 characters, one
 * with control characters, or the header given twice is 400 invalid_body (nothing is recorded). */
export function parseIdempotencyKey(raw: string | string[] | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') throw new ServiceError('invalid_body', 'Send the Idempotency-Key header once.');
  if (raw.length === 0 || raw.length > IDEMPOTENCY_KEY_MAX_LENGTH) {
    throw new ServiceError(
      'invalid_body',
      `The Idempotency-Key header must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} characters; got ${raw.length}.`,
    );
  }
  if (hasControl(raw))
    throw new ServiceError('invalid_body', 'The Idempotency-Key header must not contain control characters.');
  return raw;
}

/** An answer as it went out (and is replayed): status, the headers of its own, body. */
export interface StoredAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
}

/** A key claimed for one request: the request id every attempt with this key uses, and the first
 * answer once one has been saved. */
export interface IdempotencyClaim {
  readonly projectId: string;
  readonly key: string;
  readonly requestId: string;
  /** True for the attempt that claimed the key; false for a duplicate. */
  readonly first: boolean;
  readonly answer?: StoredAnswer;
}

interface Row {
  request_id: string;
  body_hash: string;
  endpoint: string;
  response: StoredAnswer | null;
}

/**
 * Idempotency-Key bookkeeping for every POST (DESIGN.md section 9), in PostgreSQL so every api
 * replica shares it. A key is scoped to the project and bound, for 24 hours, to the endpoint and
 * the parsed body of the request that claimed it, and to one request id; the first answer that
 * records work done is saved and replayed to every later attempt.
 */
export class IdempotencyKeys {
  constructor(private readonly db: DataSource) {}

  /** Claims `key` for this endpoint and body, or finds the attempt that claimed it; 409
   * idempotency_conflict when it was claimed for another body or endpoint. */
  async claim(projectId: string, key: string, endpoint: string, body: unknown): Promise<IdempotencyClaim> {
    const hash = bodyHash(body);
    const requestId = randomUUID();
    // One statement claims a free key or takes over one older than the window; a key claimed by a
    // concurrent attempt comes back as that attempt's row.
    const rows: (Row & { fresh: boolean })[] = await this.db.query(
      `with claimed as (
         insert into idempotency_keys (project_id, key, endpoint, body_hash, request_id) values ($1, $2, $3, $4, $5)
         on conflict (project_id, key) do update
           set endpoint = excluded.endpoint, body_hash = excluded.body_hash, request_id = excluded.request_id, response = null, created_at = now()
           where idempotency_keys.created_at < now() - make_interval(hours => $6)
         returning request_id, body_hash, endpoint, response, true as fresh)
       select * from claimed
       union all
       select request_id, body_hash, endpoint, response, false as fresh from idempotency_keys
        where project_id = $1 and key = $2 and not exists (select 1 from claimed)`,
      [projectId, key, endpoint, hash, requestId, IDEMPOTENCY_WINDOW_HOURS],
    );
    const row = rows[0];
    // The other attempt's row is not visible yet (its insert is not committed): ask again.
    if (!row) return this.claim(projectId, key, endpoint, body);
    if (row.fresh) return { projectId, key, requestId, first: true };
    if (row.endpoint !== endpoint) {
      throw new ServiceError(
        'idempotency_conflict',
        `This Idempotency-Key was used in the last ${IDEMPOTENCY_WINDOW_HOURS} hours on another endpoint (${row.endpoint}).`,
      );
    }
    if (row.body_hash !== hash) {
      throw new ServiceError(
        'idempotency_conflict',
        `This Idempotency-Key was used in the last ${IDEMPOTENCY_WINDOW_HOURS} hours with a different request body.`,
      );
    }
    return {
      projectId,
      key,
      requestId: row.request_id,
      first: false,
      ...(row.response ? { answer: row.response } : {}),
    };
  }

  /** The answer saved under `key` for this endpoint and body within the window, without claiming
   * anything: for a request refused by a check that the first attempt passed (a session message
   * retried after the session ended is answered as it was first, not 410). */
  async answered(projectId: string, key: string, endpoint: string, body: unknown): Promise<StoredAnswer | undefined> {
    const rows: Row[] = await this.db.query(
      `select request_id, body_hash, endpoint, response from idempotency_keys
        where project_id = $1 and key = $2 and created_at >= now() - make_interval(hours => $3)`,
      [projectId, key, IDEMPOTENCY_WINDOW_HOURS],
    );
    const row = rows[0];
    return row && row.endpoint === endpoint && row.body_hash === bodyHash(body)
      ? (row.response ?? undefined)
      : undefined;
  }

  /** Saves `answer` as the key's answer unless one is saved already, and returns the saved one:
   * concurrent attempts all answer with the first that was saved. */
  async save(claim: IdempotencyClaim, answer: StoredAnswer): Promise<StoredAnswer> {
    const [saved] = (await this.db.query(
      `update idempotency_keys set response = $4 where project_id = $1 and key = $2 and request_id = $3 and response is null returning response`,
      [claim.projectId, claim.key, claim.requestId, JSON.stringify(answer)],
    )) as [{ response: StoredAnswer }[], number];
    if (saved[0]) return saved[0].response;
    // Another attempt saved first (a new statement sees its commit).
    const rows: { response: StoredAnswer | null }[] = await this.db.query(
      `select response from idempotency_keys where project_id = $1 and key = $2 and request_id = $3`,
      [claim.projectId, claim.key, claim.requestId],
    );
    // Or the key has passed its window and been taken over by another request: this answer is ours alone.
    return rows[0]?.response ?? answer;
  }
}
