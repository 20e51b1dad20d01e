import {
  HostAllowList,
  checkResolvedHost,
  classifyAddress,
  parseCidr,
  parseIp,
  type ResolvedAddress,
} from './address.policy.js';

function allowList(entries: string[]): HostAllowList {
  const list = HostAllowList.parse(entries);
  if (!(list instanceof HostAllowList)) throw new Error(list.error);
  return list;
}

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });

describe('parseIp', () => {
  it.each([
    ['127.0.0.1', 4, 0x7f000001n],
    ['0.0.0.0', 4, 0n],
    ['255.255.255.255', 4, 0xffffffffn],
    ['::', 6, 0n],
    ['::1', 6, 1n],
    ['[::1]', 6, 1n],
    ['fe80::1', 6, (0xfe80n << 112n) | 1n],
    ['::ffff:10.0.0.1', 6, (0xffffn << 32n) | 0x0a000001n],
    ['2001:db8:0:0:0:0:0:1', 6, (0x20010db8n << 96n) | 1n],
  ])('parses %s', (text, family, value) => {
    expect(parseIp(text)).toEqual({ family, value });
  });

  it.each([
    '',
    'localhost',
    '1.2.3',
    '1.2.3.4.5',
    '256.0.0.1',
    '01.2.3.4',
    '1::2::3',
    '1:2:3:4:5:6:7:8:9',
    'fe80::1%eth0',
    '::ffff:1.2.3.999',
    '12345::',
  ])('refuses %p', (text) => {
    expect(parseIp(text)).toBeUndefined();
  });
});

describe('classifyAddress', () => {
  it.each([
    ['8.8.8.8', 'public'],
    ['93.184.216.34', 'public'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['100.128.0.1', 'public'],
    ['169.254.169.254', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['2606:4700:4700::1111', 'public'],
    ['2a00:1450:4001:80b::200e', 'public'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:8.8.8.8', 'public'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::8.8.8.8', 'public'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:0808:0808::', 'public'],
    ['::127.0.0.1', 'reserved'],
    ['3fff::1', 'public'],
    ['4000::1', 'reserved'],
  ])('%s is %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it('returns undefined for a name', () => {
    expect(classifyAddress('example.com')).toBeUndefined();
  });
});

describe('parseCidr', () => {
  it('masks the base to the prefix and treats a bare address as a single host', () => {
    expect(parseCidr('10.1.2.3/8')).toEqual({ family: 4, base: 0x0a000000n, prefix: 8 });
    expect(parseCidr('127.0.0.1')).toEqual({ family: 4, base: 0x7f000001n, prefix: 32 });
    expect(parseCidr('fc00::/7')).toEqual({ family: 6, base: 0xfcn << 120n, prefix: 7 });
  });

  it.each(['10.0.0.0/33', '::/129', '10.0.0.0/8/1', '10.0.0.0/x', 'example.com/8'])('refuses %p', (text) => {
    expect(parseCidr(text)).toBeUndefined();
  });
});

describe('HostAllowList', () => {
  it('rejects an entry that is neither a name nor a network', () => {
    expect(HostAllowList.parse(['intranet.example', 'http://x'])).toEqual({
      error: 'allowHosts entry "http://x" is neither a hostname, a "*.domain" pattern, an IP address nor a CIDR',
    });
  });

  it('matches names exactly, case-insensitively and ignoring a trailing dot, and *.domain subdomains', () => {
    const list = allowList(['Intranet.Example', '*.corp.example']);
    expect(list.allowsName('intranet.example.')).toBe(true);
    expect(list.allowsName('www.intranet.example')).toBe(false);
    expect(list.allowsName('wiki.corp.example')).toBe(true);
    expect(list.allowsName('corp.example')).toBe(false);
    expect(list.allowsName('evilcorp.example')).toBe(false);
  });

  it('never treats an IP literal as an allowed name', () => {
    expect(allowList(['127.0.0.1']).allowsName('127.0.0.1')).toBe(false);
  });

  it('matches networks, including IPv4-mapped IPv6 addresses', () => {
    const list = allowList(['10.0.0.0/8', '127.0.0.1']);
    expect(list.allowsAddress(parseIp('10.9.8.7')!)).toBe(true);
    expect(list.allowsAddress(parseIp('::ffff:10.9.8.7')!)).toBe(true);
    expect(list.allowsAddress(parseIp('127.0.0.2')!)).toBe(false);
  });
});

describe('checkResolvedHost', () => {
  const none = allowList([]);

  it('accepts a name whose every address is public', () => {
    expect(checkResolvedHost('example.com', [v4('93.184.216.34'), v6('2606:2800:220:1::1')], none)).toEqual({
      ok: true,
    });
  });

  it('refuses a name when any one address is private (no mixing a private answer in)', () => {
    expect(checkResolvedHost('mixed.example', [v4('93.184.216.34'), v4('10.0.0.5')], none)).toEqual({
      ok: false,
      reason: 'mixed.example resolves to 10.0.0.5, which is a private address',
    });
  });

  it('names the kind of address refused', () => {
    expect(checkResolvedHost('localhost', [v6('::1')], none)).toEqual({
      ok: false,
      reason: 'localhost resolves to ::1, which is a loopback address',
    });
    expect(checkResolvedHost('meta.example', [v4('169.254.169.254')], none)).toEqual({
      ok: false,
      reason: 'meta.example resolves to 169.254.169.254, which is a link-local address',
    });
    expect(checkResolvedHost('0.0.0.0', [v4('0.0.0.0')], none)).toEqual({
      ok: false,
      reason: '0.0.0.0 is an unspecified address',
    });
    expect(checkResolvedHost('100.64.1.1', [v4('100.64.1.1')], none)).toEqual({
      ok: false,
      reason: '100.64.1.1 is a carrier-grade NAT address',
    });
  });

  it('refuses a name that resolved to nothing', () => {
    expect(checkResolvedHost('nothing.example', [], none)).toEqual({
      ok: false,
      reason: 'nothing.example did not resolve to any address',
    });
  });

  it('accepts a listed name whatever it resolves to, but only that name', () => {
    const list = allowList(['localhost']);
    expect(checkResolvedHost('localhost', [v4('127.0.0.1')], list)).toEqual({ ok: true });
    expect(checkResolvedHost('127.0.0.1', [v4('127.0.0.1')], list)).toEqual({
      ok: false,
      reason: '127.0.0.1 is a loopback address',
    });
  });

  it('accepts a non-public address inside a listed network', () => {
    const list = allowList(['192.168.0.0/16']);
    expect(checkResolvedHost('printer.lan', [v4('192.168.1.20')], list)).toEqual({ ok: true });
    expect(checkResolvedHost('router.lan', [v4('10.0.0.1')], list)).toEqual({
      ok: false,
      reason: 'router.lan resolves to 10.0.0.1, which is a private address',
    });
  });
});
