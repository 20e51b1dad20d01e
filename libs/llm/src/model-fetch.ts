import { guardedFetch, HostAllowList, systemResolve, type GuardedFetch } from '#libs/egress';
import type { SdkProvider } from './language-model.js';
import { ModelError } from './model-error.js';

/** Largest model response read, in bytes: far above any reply, a bound on a server that never stops. */
export const MODEL_RESPONSE_MAX_BYTES = 32 * 1024 * 1024;

const POLICY_NOTE =
  "Model providers are reached only at public internet addresses (not loopback, private, link-local or other special ranges) unless the operator's MODEL_ALLOW_HOSTS names the host.";

/**
 * The fetch every AI SDK provider is given: the base URL is egress like fetch_url's (DESIGN.md
 * section 11). Each request's host is resolved once and checked against the address policy and
 * the operator's allow-list, the connection goes only to the checked addresses (and is kept for
 * the next call to the same ones), and redirects are not followed (the key would go with them).
 */
export function modelFetch(provider: SdkProvider, allowHosts: readonly string[]): GuardedFetch {
  const allow = HostAllowList.parse(allowHosts);
  if (!(allow instanceof HostAllowList))
    throw new ModelError(`the operator's MODEL_ALLOW_HOSTS is malformed: ${allow.error}`, { kind: 'rejected' });
  return guardedFetch({
    allow,
    resolve: systemResolve,
    maxBytes: MODEL_RESPONSE_MAX_BYTES,
    what: (url) => `call the ${provider} model at ${url.origin}`,
    policyNote: POLICY_NOTE,
    keepAlive: true,
  });
}
