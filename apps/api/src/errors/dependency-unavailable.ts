import { ServiceError } from '#libs/contracts';

/** What a client is told to wait before retrying while PostgreSQL is unreachable: a restart or a
 * fail-over takes seconds. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/** Socket errors that mean the server could not be reached or went away mid-query. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
]);

/** PostgreSQL SQLSTATEs that mean "not now" rather than "never": class 08 (connection exception),
 * 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now (starting or stopping),
 * 53300 too_many_connections. (Serialisation failures and deadlocks are the query's own to retry.) */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|53300)$/;

/** node-postgres' own messages for a connection that ended or never came (they carry no code). */
const PG_CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end|connection timeout/i;

/** The error and its causes (TypeORM's QueryFailedError keeps the driver's error; Nest and Node
 * wrap with `cause`; an AggregateError of a dual-stack connect holds each attempt's error). */
function* chain(e: unknown): Generator<unknown> {
  const seen = new Set<unknown>();
  const queue = [e];
  while (queue.length > 0) {
    const next = queue.shift();
    if (next === undefined || next === null || seen.has(next)) continue;
    seen.add(next);
    yield next;
    if (typeof next !== 'object') continue;
    const o = next as { cause?: unknown; driverError?: unknown; errors?: unknown };
    queue.push(o.cause, o.driverError);
    if (Array.isArray(o.errors)) queue.push(...(o.errors as unknown[]));
  }
}

/** Whether `e` means PostgreSQL could not be reached or went away (not a bad query): a 503 the
 * client retries, not a 500. */
export function isDatabaseUnavailable(e: unknown): boolean {
  for (const err of chain(e)) {
    if (typeof err !== 'object') continue;
    const { code, message } = err as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code))) return true;
    if (typeof message === 'string' && PG_CONNECTION_MESSAGES.test(message)) return true;
  }
  return false;
}

/** The contract's 503 for a dependency outage, with `Retry-After`. */
export function databaseUnavailable(): ServiceError {
  return new ServiceError(
    'service_unavailable',
    'The service is temporarily unavailable (its database cannot be reached). Retry after the number of seconds in Retry-After; a POST retried with the same Idempotency-Key runs at most once.',
    {
      'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS),
    },
  );
}
