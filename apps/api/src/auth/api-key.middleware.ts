import { Injectable } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { AccountsService, type Principal } from '#libs/accounts';
import { ServiceError } from '#libs/contracts';
import { RATE_LIMIT_PER_MINUTE, rateLimitVerdict } from '#libs/metering';
import { addLogContext } from '#libs/observability';

export type AuthenticatedRequest = Request & { principal?: Principal };

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

/** Whether a path is under `/v1`, the routes that need a key (Express matches routes case-insensitively). */
export const needsApiKey = (path: string): boolean =>
  /^\/v1(?:\/|$)/i.test(path) && !/^\/v1\/openapi\.json$/i.test(path);

/**
 * Authentication and the rate limit of every `/v1` request, as Express middleware registered
 * before the body parser (app.ts): DESIGN.md section 7 orders 401, then 429, then 400, so a caller
 * without a valid key never has its body read, and every authenticated request counts toward the
 * limit whatever its body. A missing header, another scheme, a malformed, unknown or revoked key
 * each give 401 invalid_api_key. Keys are cached while the process's listener hears their
 * writes (libs/accounts), so a revocation holds within a second on every replica. Failures go on
 * to the contract's exception filter, as body-parser failures do.
 */
@Injectable()
export class ApiKeyMiddleware {
  constructor(private readonly accounts: AccountsService) {}

  readonly use = (req: AuthenticatedRequest, _res: Response, next: NextFunction): void => {
    if (!needsApiKey(req.path)) return next();
    this.authenticate(req.headers.authorization).then((principal) => {
      req.principal = principal;
      addLogContext({ project_id: principal.project.id });
      next();
    }, next);
  };

  private async authenticate(header: string | undefined): Promise<Principal> {
    if (!header)
      throw new ServiceError(
        'invalid_api_key',
        'Missing Authorization header. Send `Authorization: Bearer <API key>`.',
      );
    const match = BEARER.exec(header);
    if (!match?.[1])
      throw new ServiceError(
        'invalid_api_key',
        'The Authorization header must use the Bearer scheme: `Authorization: Bearer <API key>`.',
      );
    // The key, its project and the rate limit's count in one round trip.
    const found = await this.accounts.authenticateRequest(match[1]);
    if (!found) throw new ServiceError('invalid_api_key', 'The API key is malformed, unknown or revoked.');
    const rate = rateLimitVerdict(found.hits);
    if (!rate.allowed) {
      throw new ServiceError(
        'rate_limited',
        `This project's ${RATE_LIMIT_PER_MINUTE} requests a minute are taken (by its requests of the last 60 seconds and the retries it was told to send). Wait ${rate.retryAfterSeconds} s (Retry-After), and that retry is admitted.`,
        {
          'Retry-After': String(rate.retryAfterSeconds),
        },
      );
    }
    return found.principal;
  }
}
