/**
 * Which network destinations the service may reach (fetch_url, MCP servers, webhooks). Pure: DNS
 * answers are passed in, so the rules are unit-tested without I/O and applied to the exact
 * addresses the connection will use.
 */

/** What an IP address is, for the SSRF rules; only `public` is reachable without an allow-list entry. */
export type AddressKind =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'carrier-grade NAT'
  | 'link-local'
  | 'unique-local'
  | 'multicast'
  | 'reserved';

/** A parsed IP address: family and value (32 or 128 bits). */
export interface IpAddress {
  readonly family: 4 | 6;
  readonly value: bigint;
}

/** A network in CIDR notation. */
export interface Cidr {
  readonly family: 4 | 6;
  readonly base: bigint;
  readonly prefix: number;
}

/** Parses dotted-quad IPv4 or IPv6 (with `::` and an embedded IPv4 tail; brackets allowed); undefined otherwise. */
export function parseIp(text: string): IpAddress | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const v4 = parseIpv4(bare);
  if (v4 !== undefined) return { family: 4, value: v4 };
  const v6 = parseIpv6(bare);
  return v6 === undefined ? undefined : { family: 6, value: v6 };
}

function parseIpv4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = (value << 8n) | BigInt(octet);
  }
  return value;
}

function parseIpv6(text: string): bigint | undefined {
  // Zone ids (fe80::1%eth0) name a local interface: never a destination we accept.
  if (text.includes('%') || !/^[0-9a-fA-F:.]+$/.test(text)) return undefined;
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (part: string): number[] | undefined => {
    if (part === '') return [];
    const groups: number[] = [];
    const pieces = part.split(':');
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i] as string;
      if (i === pieces.length - 1 && piece.includes('.')) {
        const v4 = parseIpv4(piece);
        if (v4 === undefined) return undefined;
        groups.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(piece)) return undefined;
        groups.push(parseInt(piece, 16));
      }
    }
    return groups;
  };
  const head = groupsOf(halves[0] as string);
  const tail = halves.length === 2 ? groupsOf(halves[1] as string) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  return groups.reduce((acc, group) => (acc << 16n) | BigInt(group), 0n);
}

/** Parses "10.0.0.0/8", "fc00::/7" or a single address (as /32 or /128); undefined when malformed. */
export function parseCidr(text: string): Cidr | undefined {
  const [addressText, prefixText, extra] = text.trim().split('/');
  if (extra !== undefined || addressText === undefined) return undefined;
  const ip = parseIp(addressText);
  if (!ip) return undefined;
  const bits = ip.family === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? bits : Number(prefixText);
  if (prefix > bits) return undefined;
  return { family: ip.family, base: ip.value & maskOf(prefix, bits), prefix };
}

function maskOf(prefix: number, bits: number): bigint {
  const all = (1n << BigInt(bits)) - 1n;
  return prefix === 0 ? 0n : (all >> BigInt(bits - prefix)) << BigInt(bits - prefix);
}

/** Whether `ip` lies in `cidr` (IPv4-mapped IPv6 addresses count as their IPv4 address). */
export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  const address = unwrapMapped(ip);
  if (address.family !== cidr.family) return false;
  return (address.value & maskOf(cidr.prefix, cidr.family === 4 ? 32 : 128)) === cidr.base;
}

function cidr(text: string): Cidr {
  const parsed = parseCidr(text);
  if (!parsed) throw new Error(`bad built-in CIDR ${text}`);
  return parsed;
}

const IPV4_RANGES: readonly (readonly [Cidr, AddressKind])[] = [
  [cidr('0.0.0.0/8'), 'unspecified'],
  [cidr('10.0.0.0/8'), 'private'],
  [cidr('100.64.0.0/10'), 'carrier-grade NAT'],
  [cidr('127.0.0.0/8'), 'loopback'],
  [cidr('169.254.0.0/16'), 'link-local'],
  [cidr('172.16.0.0/12'), 'private'],
  [cidr('192.0.0.0/24'), 'reserved'],
  [cidr('192.0.2.0/24'), 'reserved'],
  [cidr('192.88.99.0/24'), 'reserved'],
  [cidr('192.168.0.0/16'), 'private'],
  [cidr('198.18.0.0/15'), 'reserved'],
  [cidr('198.51.100.0/24'), 'reserved'],
  [cidr('203.0.113.0/24'), 'reserved'],
  [cidr('224.0.0.0/4'), 'multicast'],
  [cidr('240.0.0.0/4'), 'reserved'],
];

const IPV6_RANGES: readonly (readonly [Cidr, AddressKind])[] = [
  [cidr('::/128'), 'unspecified'],
  [cidr('::1/128'), 'loopback'],
  [cidr('::/96'), 'reserved'],
  [cidr('64:ff9b:1::/48'), 'private'],
  [cidr('100::/64'), 'reserved'],
  [cidr('2001::/23'), 'reserved'],
  [cidr('2001:db8::/32'), 'reserved'],
  [cidr('fc00::/7'), 'unique-local'],
  [cidr('fe80::/10'), 'link-local'],
  [cidr('fec0::/10'), 'private'],
  [cidr('ff00::/8'), 'multicast'],
];
const GLOBAL_UNICAST = cidr('2000::/3');
const IPV4_MAPPED = cidr('::ffff:0:0/96');
const NAT64 = cidr('64:ff9b::/96');
const SIX_TO_FOUR = cidr('2002::/16');

/** An IPv4-mapped IPv6 address (::ffff:a.b.c.d) as the IPv4 address it stands for. */
function unwrapMapped(ip: IpAddress): IpAddress {
  return ip.family === 6 && rawContains(IPV4_MAPPED, ip) ? { family: 4, value: ip.value & 0xffffffffn } : ip;
}

function rawContains(range: Cidr, ip: IpAddress): boolean {
  return range.family === ip.family && (ip.value & maskOf(range.prefix, range.family === 4 ? 32 : 128)) === range.base;
}

/** Classifies an address; addresses that embed an IPv4 address (mapped, NAT64, 6to4) are judged by it. */
export function classifyIp(ip: IpAddress): AddressKind {
  if (ip.family === 4) return IPV4_RANGES.find(([range]) => rawContains(range, ip))?.[1] ?? 'public';
  if (rawContains(IPV4_MAPPED, ip) || rawContains(NAT64, ip))
    return classifyIp({ family: 4, value: ip.value & 0xffffffffn });
  if (rawContains(SIX_TO_FOUR, ip)) return classifyIp({ family: 4, value: (ip.value >> 80n) & 0xffffffffn });
  const special = IPV6_RANGES.find(([range]) => rawContains(range, ip))?.[1];
  if (special) return special;
  return rawContains(GLOBAL_UNICAST, ip) ? 'public' : 'reserved';
}

/** Classifies an address given as text; undefined when it is not an IP address. */
export function classifyAddress(address: string): AddressKind | undefined {
  const ip = parseIp(address);
  return ip ? classifyIp(ip) : undefined;
}

/**
 * The operator's exceptions: hostnames (exact, or `*.example.com` for its subdomains) whose every
 * address is accepted, and IP addresses or CIDRs that are accepted whatever name led to them.
 */
export class HostAllowList {
  private readonly names = new Set<string>();
  private readonly suffixes: string[] = [];
  private readonly networks: Cidr[] = [];

  private constructor() {}

  /** Parses the entries; returns the first malformed one as an error instead. */
  static parse(entries: readonly string[]): HostAllowList | { readonly error: string } {
    const list = new HostAllowList();
    for (const raw of entries) {
      const entry = raw.trim().toLowerCase();
      const network = parseCidr(entry);
      if (network) {
        list.networks.push(network);
      } else if (/^\*\.[a-z0-9-]+(\.[a-z0-9-]+)*\.?$/.test(entry)) {
        list.suffixes.push(normaliseHostname(entry.slice(1)));
      } else if (/^[a-z0-9-_]+(\.[a-z0-9-_]+)*\.?$/.test(entry)) {
        list.names.add(normaliseHostname(entry));
      } else {
        return {
          error: `allowHosts entry "${raw}" is neither a hostname, a "*.domain" pattern, an IP address nor a CIDR`,
        };
      }
    }
    return list;
  }

  /** Whether the hostname itself is allowed (then any address it resolves to is accepted). */
  allowsName(hostname: string): boolean {
    const name = normaliseHostname(hostname);
    if (parseIp(name)) return false;
    return this.names.has(name) || this.suffixes.some((suffix) => name.endsWith(suffix));
  }

  /** Whether a non-public address is accepted because a listed network holds it. */
  allowsAddress(ip: IpAddress): boolean {
    return this.networks.some((network) => cidrContains(network, ip));
  }
}

function normaliseHostname(hostname: string): string {
  const lower = hostname.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/** One DNS answer. */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/**
 * Applies the SSRF rules to a hostname and the addresses it resolved to: every address must be
 * public, or listed, or the name itself listed. One bad address refuses the whole name, so a
 * resolver cannot slip a private answer in beside a public one.
 */
export function checkResolvedHost(
  hostname: string,
  addresses: readonly ResolvedAddress[],
  allow: HostAllowList,
): { readonly ok: true } | { readonly ok: false; readonly reason: string } {
  if (addresses.length === 0) return { ok: false, reason: `${hostname} did not resolve to any address` };
  if (allow.allowsName(hostname)) return { ok: true };
  for (const { address } of addresses) {
    const ip = parseIp(address);
    if (!ip) return { ok: false, reason: `${hostname} resolved to "${address}", which is not an IP address` };
    const kind = classifyIp(ip);
    if (kind !== 'public' && !allow.allowsAddress(ip)) {
      const named = parseIp(hostname) ? `${address} is` : `${hostname} resolves to ${address}, which is`;
      return { ok: false, reason: `${named} ${kind === 'unspecified' ? 'an unspecified' : `a ${kind}`} address` };
    }
  }
  return { ok: true };
}
