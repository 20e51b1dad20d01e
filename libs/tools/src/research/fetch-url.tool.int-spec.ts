import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import type { ToolResult } from '../tool.js';
import type { ResolvedAddress } from '#libs/egress';
import { fetchUrlTool, type FetchUrlOptions } from './fetch-url.tool.js';

const POLICY =
  'fetch_url reaches only public internet addresses (not loopback, private, link-local or other special ranges).';
const PAGE = `<!doctype html><html><head><title>Test &amp; Page</title><style>p { color: red }</style>
<script>document.write('secret')</script></head><body><h1>Welcome</h1><p>Read the <a href="/docs">docs</a>.</p>
<ul><li>one</li><li>two</li></ul><img src="/x.png" alt="pixel"></body></html>`;

let server: http.Server;
let port: number;
const hits: string[] = [];

function route(req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://test');
  hits.push(url.pathname);
  switch (url.pathname) {
    case '/page':
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
      return;
    case '/text':
      res
        .writeHead(200, { 'content-type': 'text/plain; charset=iso-8859-1' })
        .end(Buffer.from('caf\xe9 au lait', 'latin1'));
      return;
    case '/gzip':
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' }).end(gzipSync('unzipped text'));
      return;
    case '/big':
      res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(2 * 1024 * 1024));
      return;
    case '/bomb':
      res
        .writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' })
        .end(gzipSync(Buffer.alloc(20 * 1024 * 1024, 0x61)));
      return;
    case '/slow':
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first bytes, then nothing');
      return;
    case '/silent':
      return;
    case '/loop':
      res.writeHead(302, { location: `/loop?n=${Number(url.searchParams.get('n') ?? 0) + 1}` }).end();
      return;
    case '/hop':
      res.writeHead(301, { location: '/page' }).end();
      return;
    case '/to-loopback':
      res.writeHead(302, { location: `http://127.0.0.1:${port}/page` }).end();
      return;
    case '/to-file':
      res.writeHead(302, { location: 'file:///etc/passwd' }).end();
      return;
    case '/compress':
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'compress' }).end('\x1f\x9d...');
      return;
    case '/image':
      res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]));
      return;
    default:
      res.writeHead(404, { 'content-type': 'text/plain' }).end('no such page');
  }
}

beforeAll(async () => {
  server = http.createServer(route);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  hits.length = 0;
});

function fetchUrl(url: string, options: FetchUrlOptions = {}): Promise<ToolResult> {
  return fetchUrlTool.run({ url }, { options });
}

/** A resolver that answers every name with 127.0.0.1 and counts its calls: the names below exist only here. */
function fakeDns(): { resolve: (hostname: string) => Promise<ResolvedAddress[]>; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    resolve: async (hostname: string) => {
      calls.push(hostname);
      return [{ address: '127.0.0.1', family: 4 }];
    },
  };
}

const allowLoopback: FetchUrlOptions = { allowHosts: ['127.0.0.1'] };

describe('fetch_url against a real local server', () => {
  it('refuses loopback by default, before any request is made', async () => {
    await expect(fetchUrl(`http://127.0.0.1:${port}/page`)).resolves.toEqual({
      ok: false,
      error: `Refused to fetch http://127.0.0.1:${port}/page: 127.0.0.1 is a loopback address. ${POLICY}`,
    });
    expect(hits).toEqual([]);
  });

  it.each([
    ['0.0.0.0', '0.0.0.0', '0.0.0.0 is an unspecified address'],
    ['[::1]', '[::1]', '::1 is a loopback address'],
    ['2130706433', '127.0.0.1', '127.0.0.1 is a loopback address'],
    ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '::ffff:7f00:1 is a loopback address'],
  ])('refuses %s, however the address is spelt', async (host, normalised, reason) => {
    await expect(fetchUrl(`http://${host}:${port}/page`)).resolves.toEqual({
      ok: false,
      error: `Refused to fetch http://${normalised}:${port}/page: ${reason}. ${POLICY}`,
    });
    expect(hits).toEqual([]);
  });

  it('refuses a name that resolves to loopback', async () => {
    const dns = fakeDns();
    await expect(fetchUrl(`http://intranet.test:${port}/page`, { resolve: dns.resolve })).resolves.toEqual({
      ok: false,
      error: `Refused to fetch http://intranet.test:${port}/page: intranet.test resolves to 127.0.0.1, which is a loopback address. ${POLICY}`,
    });
    expect(hits).toEqual([]);
  });

  it('fetches an allowed address and converts HTML to text', async () => {
    await expect(fetchUrl(`http://127.0.0.1:${port}/page`, allowLoopback)).resolves.toEqual({
      ok: true,
      output: [
        `URL: http://127.0.0.1:${port}/page`,
        'Status: 200 OK',
        'Content-Type: text/html; charset=utf-8',
        'Title: Test & Page',
        '',
        'Welcome',
        '',
        'Read the docs [/docs].',
        '',
        ' * one',
        ' * two',
      ].join('\n'),
    });
  });

  it('accepts a CIDR in allowHosts, decodes the charset and gzip', async () => {
    await expect(fetchUrl(`http://127.0.0.1:${port}/text`, { allowHosts: ['127.0.0.0/8'] })).resolves.toEqual({
      ok: true,
      output: `URL: http://127.0.0.1:${port}/text\nStatus: 200 OK\nContent-Type: text/plain; charset=iso-8859-1\n\ncafé au lait`,
    });
    await expect(fetchUrl(`http://127.0.0.1:${port}/gzip`, allowLoopback)).resolves.toEqual({
      ok: true,
      output: `URL: http://127.0.0.1:${port}/gzip\nStatus: 200 OK\nContent-Type: text/plain\n\nunzipped text`,
    });
  });

  it('connects to the address it checked: one lookup per hop, never a second one at connect time', async () => {
    const dns = fakeDns();
    const result = await fetchUrl(`http://intranet.test:${port}/hop`, {
      allowHosts: ['intranet.test'],
      resolve: dns.resolve,
    });
    expect(result.ok && result.output.split('\n').slice(0, 4)).toEqual([
      `URL: http://intranet.test:${port}/page`,
      `Redirected from: http://intranet.test:${port}/hop`,
      'Status: 200 OK',
      'Content-Type: text/html; charset=utf-8',
    ]);
    // The name exists nowhere but in this resolver, so reaching the server proves the socket used its answer.
    expect(dns.calls).toEqual(['intranet.test', 'intranet.test']);
    expect(hits).toEqual(['/hop', '/page']);
  });

  it('refuses a redirect to loopback even when the first host is allowed by name', async () => {
    const dns = fakeDns();
    await expect(
      fetchUrl(`http://intranet.test:${port}/to-loopback`, { allowHosts: ['intranet.test'], resolve: dns.resolve }),
    ).resolves.toEqual({
      ok: false,
      error:
        `Refused to follow the redirect from http://intranet.test:${port}/to-loopback to http://127.0.0.1:${port}/page: ` +
        `127.0.0.1 is a loopback address. ${POLICY}`,
    });
    expect(hits).toEqual(['/to-loopback']);
  });

  it('refuses non-http schemes, directly and through a redirect', async () => {
    await expect(fetchUrl('file:///etc/passwd')).resolves.toEqual({
      ok: false,
      error: 'Refused to fetch file:///etc/passwd: only http and https URLs are allowed.',
    });
    await expect(fetchUrl(`http://127.0.0.1:${port}/to-file`, allowLoopback)).resolves.toEqual({
      ok: false,
      error: `Refused to follow the redirect from http://127.0.0.1:${port}/to-file to file:///etc/passwd: only http and https URLs are allowed.`,
    });
    await expect(fetchUrl('not a url')).resolves.toEqual({
      ok: false,
      error: '"not a url" is not an absolute URL; give one such as https://example.com/page.',
    });
  });

  it('stops after the redirect limit', async () => {
    await expect(fetchUrl(`http://127.0.0.1:${port}/loop`, { ...allowLoopback, maxRedirects: 3 })).resolves.toEqual({
      ok: false,
      error: `Fetching http://127.0.0.1:${port}/loop stopped: more than 3 redirects (the limit).`,
    });
    expect(hits).toEqual(['/loop', '/loop', '/loop', '/loop']);
  });

  it('cuts the body at the size limit', async () => {
    const result = await fetchUrl(`http://127.0.0.1:${port}/big`, { ...allowLoopback, maxBytes: 1000 });
    expect(result).toEqual({
      ok: true,
      output: `URL: http://127.0.0.1:${port}/big\nStatus: 200 OK\nContent-Type: text/plain\n[the response was cut off at the 1000-byte limit]\n\n${'x'.repeat(1000)}`,
    });
  });

  it('applies the size limit to the decompressed body (no gzip bomb)', async () => {
    const result = await fetchUrl(`http://127.0.0.1:${port}/bomb`, allowLoopback);
    expect(result.ok).toBe(true);
    const output = result.ok ? result.output : '';
    expect(output).toContain('[the response was cut off at the 1048576-byte limit]');
    expect(output).toContain('[truncated: ');
    expect(output.length).toBeLessThan(101_000);
  });

  it('stops at the time limit, whether headers or body stall', async () => {
    for (const path of ['/slow', '/silent']) {
      const started = Date.now();
      await expect(fetchUrl(`http://127.0.0.1:${port}${path}`, { ...allowLoopback, timeoutMs: 300 })).resolves.toEqual({
        ok: false,
        error: `Fetching http://127.0.0.1:${port}${path} timed out after 300 ms.`,
      });
      expect(Date.now() - started).toBeLessThan(3000);
    }
  });

  it('refuses binary content, unknown content encodings, and reports HTTP errors', async () => {
    await expect(fetchUrl(`http://127.0.0.1:${port}/compress`, allowLoopback)).resolves.toEqual({
      ok: false,
      error: `http://127.0.0.1:${port}/compress sent its body with the unsupported content-encoding "compress".`,
    });
    await expect(fetchUrl(`http://127.0.0.1:${port}/image`, allowLoopback)).resolves.toEqual({
      ok: false,
      error: `http://127.0.0.1:${port}/image returned image/png, which fetch_url cannot read as text.`,
    });
    await expect(fetchUrl(`http://127.0.0.1:${port}/nowhere`, allowLoopback)).resolves.toEqual({
      ok: false,
      error: `http://127.0.0.1:${port}/nowhere answered HTTP 404 Not Found. Start of the response:\nno such page`,
    });
  });

  it('reports a refused connection and a misconfigured allow-list', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await expect(fetchUrl(`http://127.0.0.1:${closedPort}/`, allowLoopback)).resolves.toEqual({
      ok: false,
      error: `Fetching http://127.0.0.1:${closedPort}/ failed: connect ECONNREFUSED 127.0.0.1:${closedPort}.`,
    });
    await expect(fetchUrl(`http://127.0.0.1:${port}/page`, { allowHosts: ['not a host!'] })).resolves.toEqual({
      ok: false,
      error:
        'fetch_url is misconfigured: allowHosts entry "not a host!" is neither a hostname, a "*.domain" pattern, an IP address nor a CIDR.',
    });
  });
});
