import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { payloadFromJson, payloadToJson } from '#libs/temporal';
import type { RunningApi } from '../support/api.js';
import { e2eStack } from '../support/e2e-stack.js';

// The codec endpoints of the api (Temporal's codec-server protocol), as the Temporal UI and CLI
// call them. Only the api: encoding needs no worker.
const token = randomBytes(32).toString('base64url');
const uiUrl = 'http://127.0.0.1:8233';
const keys = `test-codec:${randomBytes(32).toString('base64')}`;

const post = (api: RunningApi, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(`${api.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const text = (bytes: Uint8Array | null | undefined): string => Buffer.from(bytes ?? new Uint8Array()).toString('utf8');

describe('the codec endpoints (/codec/encode, /codec/decode)', () => {
  const stack = e2eStack({
    name: 'codec',
    worker: false,
    env: {
      MAS_CODEC_TOKEN: token,
      MAS_PAYLOAD_KEYS: keys,
      MAS_PAYLOAD_KEY_CURRENT: 'test-codec',
      TEMPORAL_UI_URL: uiUrl,
    },
  });
  const plain = { payloads: [payloadToJson(defaultPayloadConverter.toPayload({ message: 'Ship on Friday' }))] };
  const bearer = { authorization: `Bearer ${token}` };

  it('answers 401 without the operator token, or with another one', async () => {
    for (const headers of [
      {},
      { authorization: 'Bearer not-the-token' },
      { authorization: `Basic ${token}` },
    ] as Record<string, string>[]) {
      const res = await post(stack.api, '/codec/decode', plain, headers);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({
        error: { code: 'unauthorized', message: 'The codec endpoint needs the operator token (MAS_CODEC_TOKEN).' },
      });
    }
    expect((await post(stack.api, '/codec/not-the-token/encode', plain)).status).toBe(401);
  });

  it('encrypts and decrypts a payload round trip with the token in the header', async () => {
    const encoded = await post(stack.api, '/codec/encode', plain, bearer);
    expect(encoded.status).toBe(200);
    const sealed = ((await encoded.json()) as { payloads: Parameters<typeof payloadFromJson>[0][] }).payloads;
    const payload: Payload = payloadFromJson(sealed[0]!);
    expect(text(payload.metadata!.encoding)).toBe('binary/encrypted');
    expect(text(payload.metadata!['encryption-key-id'])).toBe('test-codec');
    expect(Buffer.from(payload.data!).toString('latin1')).not.toContain('Friday');

    const decoded = await post(
      stack.api,
      '/codec/decode',
      { payloads: sealed },
      { 'x-namespace': 'default', ...bearer },
    );
    expect(decoded.status).toBe(200);
    expect(await decoded.json()).toEqual(plain);
    // Payloads that are not encrypted pass through (histories written before encryption).
    expect(await (await post(stack.api, '/codec/decode', plain, bearer)).json()).toEqual(plain);
  });

  it('does not take the token in the path (MAS_CODEC_TOKEN_IN_PATH is off)', async () => {
    const res = await post(stack.api, `/codec/${token}/decode`, plain);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({
      error: {
        code: 'unauthorized',
        message:
          'The operator token is not taken in the path here: send it as Authorization: Bearer, or sign in at /codec/session.',
      },
    });
  });

  describe('a browser signed in with the token (the Temporal UI, includeCredentials)', () => {
    const signIn = (headers: Record<string, string>, body?: string) =>
      fetch(`${stack.api.url}/codec/session`, { method: 'POST', headers, body, redirect: 'manual' });
    const cookieOf = (res: Response): string => res.headers.get('set-cookie')!.split(';')[0]!;

    it('gets an HttpOnly, SameSite=Strict cookie for /codec that the codec takes instead of the token', async () => {
      const res = await signIn(bearer);
      expect(res.status).toBe(204);
      const setCookie = res.headers.get('set-cookie')!;
      expect(setCookie).toMatch(
        /^mas_codec_session=v1\.\d+\.[\w-]{43}; Path=\/codec; Max-Age=43200; HttpOnly; SameSite=Strict$/,
      );
      expect(setCookie).not.toContain(token);
      const sealed = (
        (await (await post(stack.api, '/codec/encode', plain, { cookie: cookieOf(res) })).json()) as {
          payloads: unknown[];
        }
      ).payloads;
      const decoded = await post(
        stack.api,
        '/codec/decode',
        { payloads: sealed },
        { cookie: cookieOf(res), origin: uiUrl },
      );
      expect(decoded.status).toBe(200);
      expect(decoded.headers.get('access-control-allow-origin')).toBe(uiUrl);
      expect(decoded.headers.get('access-control-allow-credentials')).toBe('true');
      expect(await decoded.json()).toEqual(plain);
    });

    it('signs in from the form and is sent on to the Temporal UI', async () => {
      const form = await fetch(`${stack.api.url}/codec/session`);
      expect(form.status).toBe(200);
      expect(form.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(await form.text()).toContain('<input name="token" type="password"');
      const res = await signIn(
        { 'content-type': 'application/x-www-form-urlencoded' },
        new URLSearchParams({ token }).toString(),
      );
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe(uiUrl);
      expect((await post(stack.api, '/codec/decode', plain, { cookie: cookieOf(res) })).status).toBe(200);
    });

    it('refuses a wrong token, a forged or signed-out cookie', async () => {
      const wrong = await signIn({ 'content-type': 'application/x-www-form-urlencoded' }, 'token=not-the-token');
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get('set-cookie')).toBeNull();
      expect(await wrong.text()).toContain('That is not the operator token');
      expect((await signIn({ authorization: 'Bearer not-the-token' })).status).toBe(401);
      const big = await signIn({ 'content-type': 'application/x-www-form-urlencoded' }, `token=${'x'.repeat(500_000)}`);
      expect(big.status).toBe(413);

      const cookie = cookieOf(await signIn(bearer));
      const forged = cookie.replace(/\.(\d+)\./, (_, expires: string) => `.${Number(expires) + 86_400}.`);
      for (const c of [forged, 'mas_codec_session=v1.99999999999.' + 'A'.repeat(43), 'mas_codec_session='])
        expect((await post(stack.api, '/codec/decode', plain, { cookie: c })).status).toBe(401);

      const out = await fetch(`${stack.api.url}/codec/session`, { method: 'DELETE', headers: { cookie } });
      expect(out.status).toBe(204);
      expect(out.headers.get('set-cookie')).toBe(
        'mas_codec_session=; Path=/codec; Max-Age=0; HttpOnly; SameSite=Strict',
      );
    });
  });

  it('answers a malformed body or a tampered payload with 400', async () => {
    expect((await post(stack.api, '/codec/decode', { payloads: 'x' }, bearer)).status).toBe(400);
    const sealed = (
      (await (await post(stack.api, '/codec/encode', plain, bearer)).json()) as { payloads: { data: string }[] }
    ).payloads;
    const data = Buffer.from(sealed[0]!.data, 'base64');
    data[20] = data[20]! ^ 1;
    const res = await post(
      stack.api,
      '/codec/decode',
      { payloads: [{ ...sealed[0], data: data.toString('base64') }] },
      bearer,
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: {
        code: 'invalid_payload',
        message: 'An encrypted payload does not authenticate under the key "test-codec"',
      },
    });
  });

  it("answers the Temporal UI's CORS preflight, and no other origin's", async () => {
    const preflight = (origin: string) =>
      fetch(`${stack.api.url}/codec/decode`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type,x-namespace',
        },
      });
    const ui = await preflight(uiUrl);
    expect(ui.status).toBe(204);
    expect(ui.headers.get('access-control-allow-origin')).toBe(uiUrl);
    expect(ui.headers.get('access-control-allow-methods')).toContain('POST');
    expect(ui.headers.get('access-control-allow-headers')).toBe('authorization, content-type, x-namespace');
    expect(ui.headers.get('access-control-allow-credentials')).toBe('true');
    const other = await preflight('https://evil.example');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const res = await post(stack.api, '/codec/decode', plain, { ...bearer, origin: uiUrl });
    expect(res.headers.get('access-control-allow-origin')).toBe(uiUrl);
  });
});

describe("the codec endpoints with MAS_CODEC_TOKEN_IN_PATH (the local stack, for the dev server's UI)", () => {
  const stack = e2eStack({
    name: 'codec-path',
    worker: false,
    env: { MAS_CODEC_TOKEN: token, MAS_PAYLOAD_KEYS: keys, MAS_CODEC_TOKEN_IN_PATH: 'true', TEMPORAL_UI_URL: uiUrl },
  });
  const plain = { payloads: [payloadToJson(defaultPayloadConverter.toPayload({ message: 'Ship on Friday' }))] };

  it('takes the token as the path segment before encode/decode, and no other', async () => {
    const sealed = await post(stack.api, `/codec/${token}/encode`, plain);
    expect(sealed.status).toBe(200);
    const decoded = await post(stack.api, `/codec/${token}/decode`, await sealed.json());
    expect(await decoded.json()).toEqual(plain);
    expect((await post(stack.api, '/codec/not-the-token/decode', plain)).status).toBe(401);
  });
});
