import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { CODEC_SESSION_TTL_S, codecSessionValue, cookieValue, isCodecSession } from './codec-session.js';

describe('the codec sign-in cookie', () => {
  const key = randomBytes(32);
  const now = Date.parse('2026-11-26T15:00:00Z');

  it('is taken until it expires, and not after', () => {
    const value = codecSessionValue(key, now);
    expect(isCodecSession(value, key, now)).toBe(true);
    expect(isCodecSession(value, key, now + (CODEC_SESSION_TTL_S - 1) * 1000)).toBe(true);
    expect(isCodecSession(value, key, now + CODEC_SESSION_TTL_S * 1000)).toBe(false);
  });

  it('is refused under another token (a rotated MAS_CODEC_TOKEN ends every sign-in)', () => {
    expect(isCodecSession(codecSessionValue(key, now), randomBytes(32), now)).toBe(false);
  });

  it('is refused with its expiry moved or any character changed', () => {
    const value = codecSessionValue(key, now);
    const [version, expires, mac] = value.split('.') as [string, string, string];
    expect(isCodecSession(`${version}.${Number(expires) + 3600}.${mac}`, key, now)).toBe(false);
    fc.assert(
      fc.property(fc.nat(value.length - 1), fc.constantFrom(...'0123456789abcXYZ_-.'), (at, c) => {
        fc.pre(value[at] !== c);
        return !isCodecSession(value.slice(0, at) + c + value.slice(at + 1), key, now);
      }),
    );
  });

  it('is refused when it is anything but a sign-in', () => {
    for (const value of [undefined, '', 'v1', 'v1..', `v1.${now}.`, 'v2.1.x', 'token'])
      expect(isCodecSession(value, key, now)).toBe(false);
    fc.assert(fc.property(fc.string(), (value) => !isCodecSession(value, key, now)));
  });

  it('is read out of a Cookie header among others', () => {
    expect(cookieValue('a=1; mas_codec_session=v1.2.x; b=3', 'mas_codec_session')).toBe('v1.2.x');
    expect(cookieValue('xmas_codec_session=1', 'mas_codec_session')).toBeUndefined();
    expect(cookieValue(undefined, 'mas_codec_session')).toBeUndefined();
  });
});
