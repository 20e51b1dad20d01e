import { createHmac, timingSafeEqual } from 'node:crypto';

/** The codec's sign-in cookie (CodecAccess): HttpOnly, SameSite=Strict, scoped to /codec. */
export const CODEC_SESSION_COOKIE = 'mas_codec_session';

/** How long a sign-in lasts, in seconds: an operator's working day. */
export const CODEC_SESSION_TTL_S = 12 * 60 * 60;

const VERSION = 'v1';

function mac(key: Buffer, expiresAt: number): string {
  return createHmac('sha256', key).update(`codec-session:${VERSION}:${expiresAt}`).digest('base64url');
}

/**
 * A sign-in's cookie value, `v1.<expires, unix seconds>.<HMAC>`, keyed by the operator token's
 * digest: stateless (any api replica checks it), it says nothing of the token, and changing
 * MAS_CODEC_TOKEN ends every sign-in made with the old one.
 */
export function codecSessionValue(key: Buffer, nowMs: number, ttlS = CODEC_SESSION_TTL_S): string {
  const expiresAt = Math.floor(nowMs / 1000) + ttlS;
  return `${VERSION}.${expiresAt}.${mac(key, expiresAt)}`;
}

/** Whether `value` is a sign-in made with this key that has not expired at `nowMs`. */
export function isCodecSession(value: string | undefined, key: Buffer, nowMs: number): boolean {
  const match = value === undefined ? null : /^v1\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!match) return false;
  const expiresAt = Number(match[1]);
  if (expiresAt * 1000 <= nowMs) return false;
  const expected = Buffer.from(mac(key, expiresAt));
  const given = Buffer.from(match[2]!);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The value of cookie `name` in a Cookie header, if there is one. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}
