import type { NextFunction, Request, Response } from 'express';
import { servedOverHttps, STRICT_TRANSPORT_SECURITY, useTransportSecurity } from './transport-security.js';

const request = (secure: boolean): Request => ({ secure }) as Request;

describe('the transport security of the api and the console', () => {
  it('counts a request as HTTPS when the public URL is https, or when Express says so (TLS, a trusted proxy)', () => {
    expect(servedOverHttps(request(false), 'https://api.example.com')).toBe(true);
    expect(servedOverHttps(request(true), 'http://localhost:3000')).toBe(true);
    expect(servedOverHttps(request(false), 'http://localhost:3000')).toBe(false);
  });

  it('trusts the configured hops and sets Strict-Transport-Security on HTTPS answers only', () => {
    const settings: Record<string, unknown> = {};
    let handler: ((req: Request, res: Response, next: NextFunction) => void) | undefined;
    useTransportSecurity(
      { set: (name, value) => (settings[name] = value), use: (h) => (handler = h) },
      { publicUrl: 'http://localhost:3000', trustedProxyHops: 2 },
    );
    expect(settings).toEqual({ 'trust proxy': 2 });
    const headers = (secure: boolean): Record<string, string> => {
      const set: Record<string, string> = {};
      let nexted = false;
      handler!(request(secure), { setHeader: (n: string, v: string) => (set[n] = v) } as unknown as Response, () => {
        nexted = true;
      });
      expect(nexted).toBe(true);
      return set;
    };
    expect(headers(true)).toEqual({ 'Strict-Transport-Security': STRICT_TRANSPORT_SECURITY });
    expect(headers(false)).toEqual({});
  });
});
