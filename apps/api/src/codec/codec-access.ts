import { createHash, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { servedOverHttps } from '#libs/http-edge';
import { closeIfBodyUnread } from '../body-limits.js';
import {
  CODEC_SESSION_COOKIE,
  CODEC_SESSION_TTL_S,
  codecSessionValue,
  cookieValue,
  isCodecSession,
} from './codec-session.js';

export type OperatorRequest = Request & { operator?: true };

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** `/codec/<op>` or `/codec/<token>/<op>` (Express matches routes case-insensitively). */
const CODEC_PATH = /^\/codec\/(?:([^/]+)\/)?[^/]+\/?$/i;
const SESSION_PATH = /^\/codec\/session\/?$/i;
/** The sign-in form's body: `token=<MAS_CODEC_TOKEN>`, URL-encoded; nothing larger is read. */
const MAX_FORM_BYTES = 1024;

/**
 * Who may call the codec endpoints, and from which browser origin. Checked here, as Express
 * middleware before the body parser (app.ts), so a caller without the operator token
 * (MAS_CODEC_TOKEN) never has a body read beyond the anonymous limit (body-limits.ts), and is
 * answered 401 at once. The token comes:
 * - as `Authorization: Bearer <token>` (the Temporal CLI's `--codec-auth`, scripts);
 * - or as a sign-in cookie (the Temporal UI, whose codec setting cannot add a header but can send
 *   the browser's cookies, `includeCredentials`): `GET /codec/session` is a sign-in form,
 *   `POST /codec/session` with the token sets the cookie (HttpOnly, SameSite=Strict, Secure over
 *   HTTPS, 12 hours, codec-session.ts), `DELETE /codec/session` ends it in that browser; the
 *   cookie is signed under the token, so rotating MAS_CODEC_TOKEN revokes every sign-in at once;
 * - or, only where MAS_CODEC_TOKEN_IN_PATH=true (the local stack's dev server, whose UI cannot be
 *   told to send cookies), as the path segment before `encode`/`decode`.
 * CORS answers the Temporal UI's origin only (TEMPORAL_UI_URL), with credentials.
 */
@Injectable()
export class CodecAccess {
  private readonly token: Buffer | undefined;
  private readonly tokenInPath: boolean;
  private readonly uiUrl: string | undefined;
  private readonly uiOrigin: string | undefined;
  private readonly publicBaseUrl: string;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.publicBaseUrl = config.publicBaseUrl;
    this.token = config.codecToken === undefined ? undefined : digest(config.codecToken);
    this.tokenInPath = config.codecTokenInPath;
    this.uiUrl = config.temporal.uiUrl;
    this.uiOrigin = config.temporal.uiUrl && new URL(config.temporal.uiUrl).origin;
  }

  readonly use = (req: OperatorRequest, res: Response, next: NextFunction): void => {
    if (SESSION_PATH.test(req.path)) {
      void this.session(req, res).catch(next);
      return;
    }
    const match = req.method === 'POST' ? CODEC_PATH.exec(req.path) : null;
    if (!match) return next();
    this.cors(req, res);
    if (match[1] !== undefined && !this.tokenInPath) {
      this.refuse(
        req,
        res,
        'The operator token is not taken in the path here: send it as Authorization: Bearer, or sign in at /codec/session.',
      );
      return;
    }
    const token = match[1] !== undefined ? decodeURIComponentOrRaw(match[1]) : bearerToken(req);
    const signedIn =
      token === undefined &&
      this.token !== undefined &&
      isCodecSession(cookieValue(req.headers.cookie, CODEC_SESSION_COOKIE), this.token, Date.now());
    if (!signedIn && !this.isToken(token)) {
      this.refuse(req, res);
      return;
    }
    req.operator = true;
    next();
  };

  /** Allows the Temporal UI's origin (TEMPORAL_UI_URL); whether it did. */
  cors(req: Request, res: Response): boolean {
    res.setHeader('Vary', 'Origin');
    const origin = req.headers.origin;
    if (!origin || origin !== this.uiOrigin) return false;
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    return true;
  }

  private isToken(token: string | undefined): boolean {
    return this.token !== undefined && token !== undefined && timingSafeEqual(digest(token), this.token);
  }

  private refuse(req: Request, res: Response, message?: string): void {
    closeIfBodyUnread(req, res);
    res.status(401).json({
      error: {
        code: 'unauthorized',
        message:
          message ??
          (this.token
            ? 'The codec endpoint needs the operator token (MAS_CODEC_TOKEN).'
            : 'The codec endpoint is off: MAS_CODEC_TOKEN is not set.'),
      },
    });
  }

  /** `/codec/session`: the sign-in form (GET), a sign-in (POST), a sign-out (DELETE). */
  private async session(req: Request, res: Response): Promise<void> {
    if (req.method === 'GET') {
      this.page(res, 200, 'Sign in to read payloads in the Temporal UI.');
      return;
    }
    if (req.method === 'DELETE') {
      res.setHeader('Set-Cookie', this.cookie(req, '', 0));
      res.status(204).end();
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'GET, POST, DELETE');
      res.status(405).json({ error: { code: 'method_not_allowed', message: 'GET, POST or DELETE /codec/session.' } });
      return;
    }
    const form = Boolean(req.is('application/x-www-form-urlencoded'));
    const token = form ? await formToken(req) : bearerToken(req);
    if (token === null) {
      closeIfBodyUnread(req, res);
      res.status(413).json({ error: { code: 'payload_too_large', message: 'The sign-in form is 1 KB at most.' } });
      return;
    }
    if (!this.isToken(token)) {
      if (form) this.page(res, 401, 'That is not the operator token (MAS_CODEC_TOKEN).');
      else this.refuse(req, res);
      return;
    }
    res.setHeader('Set-Cookie', this.cookie(req, codecSessionValue(this.token!, Date.now()), CODEC_SESSION_TTL_S));
    if (!form) res.status(204).end();
    else if (this.uiUrl) res.redirect(303, this.uiUrl);
    else this.page(res, 200, 'Signed in for 12 hours.');
  }

  /** The sign-in form: no script and no style of its own, under a CSP that allows none. */
  private page(res: Response, status: number, note: string): void {
    // form-action covers the redirect after the form too: the UI's origin is where it goes.
    res.setHeader(
      'Content-Security-Policy',
      `default-src 'none'; form-action 'self'${this.uiOrigin ? ` ${this.uiOrigin}` : ''}; frame-ancestors 'none'`,
    );
    res.setHeader('Cache-Control', 'no-store');
    res
      .status(status)
      .type('html')
      .send(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Codec sign-in</title></head><body>` +
          `<h1>Codec sign-in</h1><p>${note}</p>` +
          `<form method="post" action="/codec/session"><label>Operator token (MAS_CODEC_TOKEN) ` +
          `<input name="token" type="password" autocomplete="off" required></label> <button type="submit">Sign in</button></form>` +
          `<p>The sign-in lasts 12 hours, in this browser only. In the Temporal UI's Codec Server settings, ` +
          `the endpoint is this server's <code>/codec</code> with "Include cross-origin credentials" on.</p></body></html>`,
      );
  }

  /** Secure when the api is served over HTTPS: an https PUBLIC_BASE_URL, or a trusted proxy's
   * X-Forwarded-Proto (TRUSTED_PROXY_HOPS; libs/http-edge). Before, only `req.secure`, which behind
   * a TLS proxy without `trust proxy` never was (issue 44). */
  private cookie(req: Request, value: string, maxAgeS: number): string {
    const secure = servedOverHttps(req, this.publicBaseUrl) ? '; Secure' : '';
    return `${CODEC_SESSION_COOKIE}=${value}; Path=/codec; Max-Age=${maxAgeS}; HttpOnly; SameSite=Strict${secure}`;
  }
}

/** The token of an `Authorization: Bearer <token>` header, if there is one. */
function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization ?? '';
  return header.startsWith('Bearer ') ? header.slice(7).trim() : undefined;
}

/** The `token` field of a URL-encoded sign-in form; null when the body is over MAX_FORM_BYTES
 * (the rest is left unread, and the connection closed after the answer: closeIfBodyUnread). */
function formToken(req: Request): Promise<string | undefined | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= MAX_FORM_BYTES) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData).off('end', onEnd).pause();
      resolve(null);
    };
    const onEnd = (): void =>
      resolve(new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('token')?.trim() || undefined);
    req.on('data', onData).once('end', onEnd).once('error', reject);
  });
}

function decodeURIComponentOrRaw(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
