import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { checkResolvedHost, parseIp, type HostAllowList, type ResolvedAddress } from './address.policy.js';

/** Resolves a hostname with the system resolver: every address, in the resolver's order. */
export async function systemResolve(hostname: string): Promise<readonly ResolvedAddress[]> {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}

/** The addresses a URL's host stands for: the literal address itself, or the resolver's answers. */
export async function addressesOf(url: URL, resolve: (hostname: string) => Promise<readonly ResolvedAddress[]> = systemResolve): Promise<{ readonly hostname: string; readonly addresses: readonly ResolvedAddress[] }> {
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const literal = parseIp(hostname);
  return { hostname, addresses: literal ? [{ address: hostname, family: literal.family }] : await resolve(hostname) };
}

/** Why a URL whose host is a literal IP address may not be reached (not public and not allowed);
 * undefined for a hostname (judged after resolution) or an acceptable address. */
export function literalAddressRefusal(url: URL, allow: HostAllowList): string | undefined {
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const literal = parseIp(hostname);
  if (!literal) return undefined;
  const verdict = checkResolvedHost(hostname, [{ address: hostname, family: literal.family }], allow);
  return verdict.ok ? undefined : verdict.reason;
}

/** A socket lookup that answers only with the addresses that were checked: no second DNS lookup,
 * so no DNS-rebinding gap between the check and the connection. */
export function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const usable = addresses.filter((a) => !options.family || a.family === options.family);
    const first = usable[0];
    if (!first) {
      callback(Object.assign(new Error('no checked address of the requested family'), { code: 'ENOTFOUND' }), '', 0);
    } else if (options.all) {
      callback(null, usable.map((a) => ({ address: a.address, family: a.family })));
    } else {
      callback(null, first.address, first.family);
    }
  };
}
