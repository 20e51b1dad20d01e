import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { startApi, type RunningApi } from '../support/api.js';
import { startAppProcess, type AppProcess } from '../support/app-process.js';
import { startConsole, type RunningConsole } from '../support/console.js';
import { freePort } from '../support/dev-temporal.js';
import { scrapeMetrics } from '../support/prometheus.js';

// What the api and the console show on their public ports to anyone (issue 44, item 7): how a
// refused upload ends, Prometheus's metrics (on a port of their own, not the public one),
// Strict-Transport-Security over HTTPS, and the codec's sign-in cookie (Secure over HTTPS, ended
// by rotating MAS_CODEC_TOKEN). Only the api and the console: none of this needs a worker.
const token = randomBytes(32).toString('base64url');
const SEVEN_MB = 7 * 1024 * 1024;

/**
 * POSTs `bytes` bytes to `url` as an ordinary client does, the whole body written as fast as the
 * connection takes it, then the answer read: with fetch, or with node's http client in 64 KB
 * writes. The status it got, or the error it got instead.
 */
async function upload(url: string, bytes: number, client: 'fetch' | 'http'): Promise<number | string> {
  if (client === 'fetch') {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.alloc(bytes, 0x20),
      });
      await res.arrayBuffer();
      return res.status;
    } catch (e) {
      return `fetch failed: ${((e as Error).cause as NodeJS.ErrnoException | undefined)?.code ?? String(e)}`;
    }
  }
  return new Promise((resolve) => {
    const req = httpRequest(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(bytes) },
    });
    req.once('response', (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode!));
      res.once('error', (e: NodeJS.ErrnoException) => resolve(`response failed: ${e.code ?? e.message}`));
    });
    // Errors after the answer (the connection's end) are no concern of the caller's.
    req.on('error', (e: NodeJS.ErrnoException) => resolve(`request failed: ${e.code ?? e.message}`));
    let sent = 0;
    const pump = (): void => {
      while (sent < bytes) {
        const n = Math.min(64 * 1024, bytes - sent);
        sent += n;
        if (!req.write(Buffer.alloc(n, 0x20))) {
          req.once('drain', pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}

// Issue 44: a 7 MB unauthenticated body was cut off under the client (EPIPE, ECONNRESET) instead of
// answered. The api in a process of its own, as deployed: in this one, the client's writes and the
// api's close never race.
describe('a 7 MB unauthenticated upload to the api', () => {
  let api: AppProcess;
  let url: string;
  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    api = startAppProcess('api', { PORT: String(port), PUBLIC_BASE_URL: url, MAS_CODEC_TOKEN: token });
    await api.started(/listening on/);
  }, 120_000);
  afterAll(async () => api?.stop());

  it.each([
    ['/codec/decode', 401],
    ['/v1/agent', 401],
    ['/no-such-route', 413],
  ])(
    'POST %s is answered %d, which fetch and node:http receive, not a reset',
    async (path, status) => {
      const got: (number | string)[] = [];
      for (let i = 0; i < 10; i++)
        for (const client of ['fetch', 'http'] as const) got.push(await upload(`${url}${path}`, SEVEN_MB, client));
      expect(got).toEqual(got.map(() => status));
    },
    120_000,
  );

  // The answer went before the body was read, and the body stays unread: Node's dump of an unread
  // body after the answer read 39.5 MB of ten refused 7 MB uploads (the drill's noisy 401 flood
  // then took a core of the api).
  it('reads (almost) nothing of ten refused 7 MB bodies', async () => {
    const bytesRead = (): number =>
      Number(/rchar: (\d+)/.exec(readFileSync(`/proc/${api.process.pid}/io`, 'utf8'))![1]);
    const before = bytesRead();
    for (let i = 0; i < 10; i++) expect(await upload(`${url}/v1/agent`, SEVEN_MB, 'http')).toBe(401);
    // Past the linger's reads, if any were to come.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // A few hundred KB a connection at most (what the kernel had buffered when the answer went).
    expect(bytesRead() - before).toBeLessThan(10 * 512 * 1024);
  }, 120_000);
});

describe('the public ports of the api and the console', () => {
  const ports = { api: 0, console: 0 };
  let api: RunningApi;
  let consoleApp: RunningConsole;

  beforeAll(async () => {
    ports.api = await freePort();
    ports.console = await freePort();
    api = await startApi({ MAS_CODEC_TOKEN: token, API_METRICS_PORT: String(ports.api) });
    consoleApp = await startConsole({ CONSOLE_METRICS_PORT: String(ports.console) });
  }, 60_000);
  afterAll(async () => {
    await api?.close();
    await consoleApp?.close();
  });

  it('serves /metrics on its own port, not on the public one', async () => {
    expect((await fetch(`${api.url}/metrics`)).status).toBe(404);
    expect((await fetch(`${consoleApp.url}/metrics`)).status).toBe(404);
    const apiMetrics = await scrapeMetrics(`http://127.0.0.1:${ports.api}/metrics`);
    expect(apiMetrics.text).toContain('mas_http_request_duration_seconds');
    const consoleMetrics = await scrapeMetrics(`http://127.0.0.1:${ports.console}/metrics`);
    expect(consoleMetrics.text).toContain('process_cpu_seconds_total');
  });

  it('sends no Strict-Transport-Security over plain HTTP, nor for an X-Forwarded-Proto it does not trust', async () => {
    for (const url of [`${api.url}/healthz`, `${consoleApp.url}/healthz`]) {
      expect((await fetch(url)).headers.get('strict-transport-security')).toBeNull();
      const spoofed = await fetch(url, { headers: { 'x-forwarded-proto': 'https' } });
      expect(spoofed.headers.get('strict-transport-security')).toBeNull();
    }
  });
});

describe('the api and the console behind a TLS proxy', () => {
  const hsts = /^max-age=\d{7,}/;

  describe('with an https public URL', () => {
    let api: RunningApi;
    let consoleApp: RunningConsole;
    beforeAll(async () => {
      api = await startApi({ MAS_CODEC_TOKEN: token, PUBLIC_BASE_URL: 'https://api.example.com' });
      consoleApp = await startConsole({ CONSOLE_PUBLIC_URL: 'https://console.example.com' });
    }, 60_000);
    afterAll(async () => {
      await api?.close();
      await consoleApp?.close();
    });

    it('sends Strict-Transport-Security on every answer', async () => {
      for (const url of [`${api.url}/healthz`, `${api.url}/v1/agent`, `${consoleApp.url}/healthz`])
        expect((await fetch(url)).headers.get('strict-transport-security')).toMatch(hsts);
    });

    it('makes the codec sign-in cookie Secure', async () => {
      const res = await fetch(`${api.url}/codec/session`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(204);
      expect(res.headers.get('set-cookie')).toMatch(/; Secure$/);
    });
  });

  describe('with an http public URL and one trusted proxy hop (TRUSTED_PROXY_HOPS, CONSOLE_TRUSTED_PROXY_HOPS)', () => {
    let api: RunningApi;
    let consoleApp: RunningConsole;
    beforeAll(async () => {
      api = await startApi({ MAS_CODEC_TOKEN: token, TRUSTED_PROXY_HOPS: '1' });
      consoleApp = await startConsole({ CONSOLE_TRUSTED_PROXY_HOPS: '1' });
    }, 60_000);
    afterAll(async () => {
      await api?.close();
      await consoleApp?.close();
    });

    it('sends Strict-Transport-Security when the proxy says X-Forwarded-Proto: https, and not otherwise', async () => {
      for (const url of [`${api.url}/healthz`, `${consoleApp.url}/healthz`]) {
        const proxied = await fetch(url, { headers: { 'x-forwarded-proto': 'https' } });
        expect(proxied.headers.get('strict-transport-security')).toMatch(hsts);
        expect(
          (await fetch(url, { headers: { 'x-forwarded-proto': 'http' } })).headers.get('strict-transport-security'),
        ).toBeNull();
      }
    });

    it('makes the codec sign-in cookie Secure when the proxy says X-Forwarded-Proto: https', async () => {
      const signIn = (proto: string) =>
        fetch(`${api.url}/codec/session`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'x-forwarded-proto': proto },
        });
      expect((await signIn('https')).headers.get('set-cookie')).toMatch(/; Secure$/);
      expect((await signIn('http')).headers.get('set-cookie')).not.toContain('Secure');
    });
  });
});

describe('revoking the codec sign-ins by rotating MAS_CODEC_TOKEN', () => {
  it('refuses a cookie signed before the rotation at once, and takes one signed after', async () => {
    const before = await startApi({ MAS_CODEC_TOKEN: token });
    let cookie: string;
    try {
      const res = await fetch(`${before.url}/codec/session`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      });
      cookie = res.headers.get('set-cookie')!.split(';')[0]!;
      const decode = await fetch(`${before.url}/codec/decode`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ payloads: [] }),
      });
      expect(decode.status).toBe(200);
    } finally {
      await before.close();
    }
    const rotated = randomBytes(32).toString('base64url');
    const after = await startApi({ MAS_CODEC_TOKEN: rotated });
    try {
      const decode = (c: string) =>
        fetch(`${after.url}/codec/decode`, {
          method: 'POST',
          headers: { cookie: c, 'content-type': 'application/json' },
          body: JSON.stringify({ payloads: [] }),
        });
      expect((await decode(cookie)).status).toBe(401);
      const fresh = await fetch(`${after.url}/codec/session`, {
        method: 'POST',
        headers: { authorization: `Bearer ${rotated}` },
      });
      expect((await decode(fresh.headers.get('set-cookie')!.split(';')[0]!)).status).toBe(200);
    } finally {
      await after.close();
    }
  }, 60_000);
});
