import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { checkResolvedHost, parseIp, type HostAllowList, type ResolvedAddress } from './address.policy.js';

// The SSRF guard of every outbound call the service makes (fetch_url, MCP servers, webhooks, model providers): the scheme, then
// every address the name resolves to, checked against the address policy and the operator's
// allow-list; the connection then goes only to those addresses (no second lookup, no rebinding gap).

/** Resolves a hostname to every address (the system resolver by default). */
export type Resolve = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** A destination the policy refuses (`policy`), or whose name did not resolve (`unresolved`, which
 * may pass); the message is written for the model or the operator. */
export class DestinationRefused extends Error {
  constructor(
    message: string,
    readonly reason: 'policy' | 'unresolved' = 'policy',
  ) {
    super(message);
  }
}

/** The system resolver: every address, in the resolver's order. */
export async function systemResolve(hostname: string): Promise<readonly ResolvedAddress[]> {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}

/**
 * The checked addresses of `url`, or a DestinationRefused naming `what` was attempted and, when an
 * address is refused, the `policyNote`.
 */
export async function checkedDestination(
  url: URL,
  what: string,
  policyNote: string,
  allow: HostAllowList,
  resolve: Resolve,
  signal: AbortSignal,
): Promise<readonly ResolvedAddress[]> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new DestinationRefused(`Refused to ${what}: only http and https URLs are allowed.`);
  }
  const hostname = hostOf(url);
  let addresses: readonly ResolvedAddress[];
  try {
    ({ addresses } = await abortable(addressesOf(url, resolve), signal));
  } catch (e) {
    if (signal.aborted) throw e;
    throw new DestinationRefused(
      `Could not ${what}: the name ${hostname} did not resolve (${describeNetworkError(e)}).`,
      'unresolved',
    );
  }
  const verdict = checkResolvedHost(hostname, addresses, allow);
  if (!verdict.ok) throw new DestinationRefused(`Refused to ${what}: ${verdict.reason}. ${policyNote}`);
  return addresses;
}

/** A URL's host without an IPv6 literal's brackets. */
const hostOf = (url: URL): string => (url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname);

/** The addresses a URL's host stands for: the literal address itself, or the resolver's answers. */
export async function addressesOf(
  url: URL,
  resolve: Resolve = systemResolve,
): Promise<{ readonly hostname: string; readonly addresses: readonly ResolvedAddress[] }> {
  const hostname = hostOf(url);
  const literal = parseIp(hostname);
  return { hostname, addresses: literal ? [{ address: hostname, family: literal.family }] : await resolve(hostname) };
}

/** Why a URL whose host is a literal IP address may not be reached (not public and not allowed);
 * undefined for a hostname (judged after resolution) or an acceptable address. */
export function literalAddressRefusal(url: URL, allow: HostAllowList): string | undefined {
  const hostname = hostOf(url);
  const literal = parseIp(hostname);
  if (!literal) return undefined;
  const verdict = checkResolvedHost(hostname, [{ address: hostname, family: literal.family }], allow);
  return verdict.ok ? undefined : verdict.reason;
}

/** A `lookup` for node:http/https that answers only with the checked addresses. */
export function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const usable = addresses.filter((a) => !options.family || a.family === options.family);
    const first = usable[0];
    if (!first) {
      callback(Object.assign(new Error('no checked address of the requested family'), { code: 'ENOTFOUND' }), '', 0);
    } else if (options.all) {
      callback(
        null,
        usable.map((a) => ({ address: a.address, family: a.family })),
      );
    } else {
      callback(null, first.address, first.family);
    }
  };
}

/** A network error in words, with its code. */
export function describeNetworkError(e: unknown): string {
  const code = typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : '';
  const message = messageOf(e);
  if (!message) return code || 'unknown error';
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

// Duck-typed: errors from Node internals may come from another realm (e.g. under a test runner's VM).
function messageOf(e: unknown): string {
  if (typeof e === 'object' && e !== null && typeof (e as { message?: unknown }).message === 'string')
    return (e as { message: string }).message;
  return typeof e === 'string' ? e : (JSON.stringify(e) ?? String(e));
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
