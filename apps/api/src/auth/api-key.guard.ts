import { createParamDecorator, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { AccountsService, type Principal } from '#libs/accounts';
import { ServiceError } from '#libs/contracts';
import { MeteringService, RATE_LIMIT_PER_MINUTE } from '#libs/metering';

export type AuthenticatedRequest = Request & { principal?: Principal };

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

/** Every `/v1` route: a missing header, another scheme, a malformed, unknown or revoked key each
 * give 401 invalid_api_key. No cache, so a revocation holds from the next request on every replica.
 * Then the project's rate limit: every authenticated request counts, whatever its answer. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly accounts: AccountsService,
    private readonly metering: MeteringService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<AuthenticatedRequest>();
    if (!req.path.startsWith('/v1/') && req.path !== '/v1') return true;
    const header = req.headers.authorization;
    if (!header) throw new ServiceError('invalid_api_key', 'Missing Authorization header. Send `Authorization: Bearer <API key>`.');
    const match = BEARER.exec(header);
    if (!match?.[1]) throw new ServiceError('invalid_api_key', 'The Authorization header must use the Bearer scheme: `Authorization: Bearer <API key>`.');
    const principal = await this.accounts.authenticate(match[1]);
    if (!principal) throw new ServiceError('invalid_api_key', 'The API key is malformed, unknown or revoked.');
    req.principal = principal;
    const rate = await this.metering.hitRateLimit(principal.project.id);
    if (!rate.allowed) {
      throw new ServiceError('rate_limited', `More than ${RATE_LIMIT_PER_MINUTE} requests in the last 60 seconds for this project. Retry in ${rate.retryAfterSeconds} s.`, {
        'Retry-After': String(rate.retryAfterSeconds),
      });
    }
    return true;
  }
}

/** The authenticated principal of a `/v1` request. */
export const CurrentPrincipal = createParamDecorator((_: unknown, context: ExecutionContext): Principal => {
  const principal = context.switchToHttp().getRequest<AuthenticatedRequest>().principal;
  if (!principal) throw new ServiceError('invalid_api_key', 'The request is not authenticated.');
  return principal;
});
