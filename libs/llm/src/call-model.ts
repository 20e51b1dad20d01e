import type { ModelTurn } from '#libs/contracts';
import { isModelProvider } from '#libs/contracts';
import { ModelError } from './model-error.js';
import type { ModelRequest } from './model-request.js';
import { callScripted } from './scripted.provider.js';
import { callSdk } from './sdk.provider.js';

/** Runs one model turn with the request's provider; failures are ModelErrors (or the caller's own abort reason). */
export async function callModel(req: ModelRequest): Promise<ModelTurn> {
  // Providers come from stored agent configuration, which the type system cannot vouch for.
  if (!isModelProvider(req.provider))
    throw new ModelError(`unknown model provider: ${String(req.provider)}`, { kind: 'rejected' });
  if (req.provider === 'scripted') return callScripted(req);
  return callSdk({ ...req, provider: req.provider });
}
