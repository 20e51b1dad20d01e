import { ArgumentsHost, Catch, HttpException, Inject, Logger, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { errorDocsUrl, ERROR_STATUS, ServiceError, type ErrorBody, type ErrorCode } from '#libs/contracts';
import { closeIfBodyUnread, payloadTooLarge } from '../body-limits.js';
import { JsonThreadLost } from '../json-off-thread.js';
import { databaseUnavailable, isDatabaseUnavailable } from './dependency-unavailable.js';

/** Body-parser failures carry a `type`; map the ones a client causes to contract codes. */
function fromBodyParser(e: unknown): ServiceError | undefined {
  const { type, limit } = (e ?? {}) as { type?: unknown; limit?: unknown };
  if (type === 'entity.parse.failed') return new ServiceError('invalid_body', 'The request body is not valid JSON.');
  // The limit depends on who is asking (body-limits.ts): 10 MB with a key, 64 KB without one.
  if (type === 'entity.too.large' && typeof limit === 'number') return payloadTooLarge(limit);
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
    return new ServiceError('invalid_body', 'The request body must be UTF-8 JSON.');
  }
  return undefined;
}

/** A contract error as its HTTP status and `{ error: { code, message, docs } }` body (also what an
 * Idempotency-Key replay of a failed request serves). */
export function renderError(error: ServiceError, publicBaseUrl: string): { status: number; body: ErrorBody } {
  return {
    status: error.status,
    body: { error: { code: error.code, message: error.message, docs: errorDocsUrl(publicBaseUrl, error.code) } },
  };
}

/** The one place where errors become HTTP: every failure leaves as `{ error: { code, message, docs } }`. */
@Catch()
export class ContractExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('errors');

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const error = this.toServiceError(exception);
    if (res.headersSent) {
      // A stream already started: it reports its own errors as events; just end it.
      res.end();
      return;
    }
    const { status, body } = renderError(error, this.config.publicBaseUrl);
    for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
    closeIfBodyUnread(host.switchToHttp().getRequest<Request>(), res);
    res.status(status).json(body);
  }

  private toServiceError(e: unknown): ServiceError {
    if (e instanceof ServiceError) return e;
    // Nest wraps Express's and body-parser's client errors in an HttpException with the original
    // as its cause.
    const cause = e instanceof HttpException ? e.cause : undefined;
    const parsed = fromBodyParser(e) ?? fromBodyParser(cause);
    if (parsed) return parsed;
    if (cause instanceof URIError)
      return new ServiceError('not_found', 'No such resource: the path is not valid percent-encoded UTF-8.');
    if (e instanceof HttpException) {
      const status = e.getStatus();
      if (status === 404) return new ServiceError('not_found', 'No such route. See the API reference at /docs.');
      if (status === 413) return new ServiceError('payload_too_large', 'The request body is larger than 10 MB.');
      // Our own failures are ServiceErrors; a bare 400 comes from Nest's body parsing.
      if (status === 400) return new ServiceError('invalid_body', 'The request body is not valid JSON.');
      const code = (Object.keys(ERROR_STATUS) as ErrorCode[]).find((c) => ERROR_STATUS[c] === status);
      if (code) return new ServiceError(code, e.message);
      // Any other client error Express or Nest raises while reading the request (415, 411, ...).
      if (status >= 400 && status < 500)
        return new ServiceError('invalid_body', `The request could not be read (HTTP ${status}). Send UTF-8 JSON.`);
    }
    // The JSON thread stopped under this request's body or its files: nothing of it was run.
    if (e instanceof JsonThreadLost) {
      this.logger.warn(e.message);
      return new ServiceError(
        'service_unavailable',
        'The service lost this request while reading it. Nothing was run. Send it again after the number of seconds in Retry-After; a POST retried with the same Idempotency-Key runs at most once.',
        { 'Retry-After': '1' },
      );
    }
    // PostgreSQL down or restarting (the very first query of a request, the key lookup, included):
    // 503 with Retry-After, a retry the client can make, never a 500.
    if (isDatabaseUnavailable(e)) {
      this.logger.warn(`PostgreSQL unavailable: ${e instanceof Error ? e.message : String(e)}`);
      return databaseUnavailable();
    }
    this.logger.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
    return new ServiceError('internal_error', 'An unexpected error occurred. It has been logged.');
  }
}
