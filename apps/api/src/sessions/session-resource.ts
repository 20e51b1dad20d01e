import { ServiceError, SESSION_STATUSES, type SessionStatus } from '#libs/contracts';
import type { SessionResource } from '#libs/resources';

/** `GET /v1/sessions` (DESIGN.md section 7). */
export interface SessionList {
  object: 'list';
  data: SessionResource[];
  has_more: boolean;
  next_cursor: string | null;
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The 410 of a session that no longer takes requests, or nothing for an active one. */
export function closedSessionError(status: SessionStatus): ServiceError | undefined {
  if (status === 'expired')
    return new ServiceError(
      'session_expired',
      'The session expired after a period without messages. Start a new session.',
    );
  if (status === 'ended')
    return new ServiceError(
      'session_ended',
      'The session was ended with DELETE /v1/sessions/{id}. Start a new session.',
    );
  return undefined;
}

export const sessionNotFound = (): ServiceError =>
  new ServiceError('session_not_found', 'No session with this id exists in this project.');

export interface ListParams {
  readonly limit: number;
  readonly after?: string;
  readonly status?: SessionStatus;
}

export const LIST_LIMIT = { default: 20, max: 100 } as const;

/** Reads `limit`, `after` (or its alias `cursor`: the `next_cursor` of the previous page) and
 * `status` from the query string; anything malformed is 400 invalid_body naming the parameter. */
export function parseListParams(query: Record<string, unknown>): ListParams {
  const single = (name: string): string | undefined => {
    const value = query[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string')
      throw new ServiceError('invalid_body', `Query parameter \`${name}\` must be given once, as a string.`);
    return value;
  };
  const rawLimit = single('limit');
  let limit: number = LIST_LIMIT.default;
  if (rawLimit !== undefined) {
    limit = Number(rawLimit);
    if (!/^\d+$/.test(rawLimit) || limit < 1 || limit > LIST_LIMIT.max) {
      throw new ServiceError(
        'invalid_body',
        `Query parameter \`limit\` must be an integer from 1 to ${LIST_LIMIT.max}; got "${rawLimit}".`,
      );
    }
  }
  const after = single('after');
  const cursor = single('cursor');
  if (after !== undefined && cursor !== undefined && after !== cursor) {
    throw new ServiceError('invalid_body', 'Give the cursor as `after` or as `cursor`, not both.');
  }
  const from = after ?? cursor;
  if (from !== undefined && !UUID.test(from)) {
    throw new ServiceError(
      'invalid_body',
      `The cursor must be a session id (the \`next_cursor\` of the previous page); got "${from}".`,
    );
  }
  const status = single('status');
  if (status !== undefined && !(SESSION_STATUSES as readonly string[]).includes(status)) {
    throw new ServiceError(
      'invalid_body',
      `Query parameter \`status\` must be one of ${SESSION_STATUSES.join(', ')}; got "${status}".`,
    );
  }
  return { limit, ...(from ? { after: from } : {}), ...(status ? { status: status as SessionStatus } : {}) };
}
