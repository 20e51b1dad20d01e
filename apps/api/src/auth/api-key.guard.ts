import { createParamDecorator, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Principal } from '#libs/accounts';
import { ServiceError } from '#libs/contracts';
import { needsApiKey, type AuthenticatedRequest } from './api-key.middleware.js';

/** Authenticates nothing itself (ApiKeyMiddleware does, before the body is read): a `/v1` route
 * reached without the principal the middleware sets means an app built without it, and is refused. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<AuthenticatedRequest>();
    if (needsApiKey(req.path) && !req.principal)
      throw new ServiceError('invalid_api_key', 'The request is not authenticated.');
    return true;
  }
}

/** The authenticated principal of a `/v1` request. */
export const CurrentPrincipal = createParamDecorator((_: unknown, context: ExecutionContext): Principal => {
  const principal = context.switchToHttp().getRequest<AuthenticatedRequest>().principal;
  if (!principal) throw new ServiceError('invalid_api_key', 'The request is not authenticated.');
  return principal;
});
