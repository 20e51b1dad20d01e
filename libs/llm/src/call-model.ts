import type { ModelTurn } from '#libs/contracts';
import { callAnthropic } from './anthropic.provider.js';
import { ModelError } from './model-error.js';
import type { ModelRequest } from './model-request.js';
import { callOpenAi } from './openai.provider.js';
import { callScripted } from './scripted.provider.js';

/** Runs one model turn with the request's provider; failures are ModelErrors (or the caller's own abort reason). */
export async function callModel(req: ModelRequest): Promise<ModelTurn> {
  switch (req.provider) {
    case 'openai':
      return callOpenAi(req);
    case 'anthropic':
      return callAnthropic(req);
    case 'scripted':
      return callScripted(req);
    default:
      // Providers come from stored agent configuration, which the type system cannot vouch for.
      throw new ModelError(`unknown model provider: ${String((req as { provider: unknown }).provider)}`, { kind: 'rejected' });
  }
}
