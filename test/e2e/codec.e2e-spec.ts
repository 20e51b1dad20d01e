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

  it('encrypts and decrypts a payload round trip with the token, in the header or the path', async () => {
    const encoded = await post(stack.api, '/codec/encode', plain, bearer);
    expect(encoded.status).toBe(200);
    const sealed = ((await encoded.json()) as { payloads: Parameters<typeof payloadFromJson>[0][] }).payloads;
    const payload: Payload = payloadFromJson(sealed[0]!);
    expect(text(payload.metadata!.encoding)).toBe('binary/encrypted');
    expect(text(payload.metadata!['encryption-key-id'])).toBe('test-codec');
    expect(Buffer.from(payload.data!).toString('latin1')).not.toContain('Friday');

    for (const [path, headers] of [
      ['/codec/decode', bearer],
      [`/codec/${token}/decode`, {}],
    ] as const) {
      const decoded = await post(stack.api, path, { payloads: sealed }, { 'x-namespace': 'default', ...headers });
      expect(decoded.status).toBe(200);
      expect(await decoded.json()).toEqual(plain);
    }
    // Payloads that are not encrypted pass through (histories written before encryption).
    expect(await (await post(stack.api, '/codec/decode', plain, bearer)).json()).toEqual(plain);
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
