import type { NextFunction, Request, Response } from 'express';

/** Strict-Transport-Security's value: a year, this host only (a sibling served over plain HTTP
 * is no concern of this app's). */
export const STRICT_TRANSPORT_SECURITY = 'max-age=31536000';

/** Where the api or the console is reached and through how many proxies (AppConfig's
 * publicBaseUrl or console.publicUrl, and trustedProxyHops). */
export interface EdgeOptions {
  readonly publicUrl: string;
  readonly trustedProxyHops: number;
}

/** The part of an Express application the edge sets up. */
interface ExpressLike {
  set(setting: 'trust proxy', value: number): unknown;
  use(handler: (req: Request, res: Response, next: NextFunction) => void): unknown;
}

/**
 * Whether `req` reached the app over HTTPS: its public URL is https (TLS ends at a proxy in front,
 * whatever the proxy's hop to the app is), or the request came over TLS, or through a trusted proxy
 * that says `X-Forwarded-Proto: https` (Express's `req.secure` under `trust proxy`; an untrusted
 * client's header counts for nothing). What makes cookies Secure and answers carry HSTS.
 */
export function servedOverHttps(req: Request, publicUrl: string): boolean {
  return publicUrl.startsWith('https:') || req.secure;
}

/**
 * The one notion of the public edge for the api and the console: Express trusts the configured
 * number of proxy hops (so `req.ip`, `req.protocol` and `req.secure` are the client's, as a trusted
 * proxy reports them, and nothing a client writes itself), and every answer served over HTTPS
 * carries Strict-Transport-Security. Call before any route or middleware that answers.
 */
export function useTransportSecurity(app: ExpressLike, options: EdgeOptions): void {
  app.set('trust proxy', options.trustedProxyHops);
  app.use((req, res, next) => {
    if (servedOverHttps(req, options.publicUrl)) res.setHeader('Strict-Transport-Security', STRICT_TRANSPORT_SECURITY);
    next();
  });
}
