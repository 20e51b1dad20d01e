import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { ConsoleAccountsService, ConsoleSession } from '#libs/accounts';

/** The cookies' names: with the __Host- prefix when the console is served over https (Secure). */
export interface CookieNames {
  readonly secure: boolean;
  readonly session: string;
  /** The anonymous form token (sign-in, invitation, reset): a double-submitted cookie. */
  readonly form: string;
}

export function cookieNames(publicUrl: string): CookieNames {
  const secure = publicUrl.startsWith('https:');
  return secure
    ? { secure, session: '__Host-mas_console', form: '__Host-mas_console_form' }
    : { secure, session: 'mas_console', form: 'mas_console_form' };
}

const sessions = new WeakMap<Request, ConsoleSession>();
const formTokens = new WeakMap<Request, string>();

/** The signed-in session of a request, set by `consoleRequests`. */
export const sessionOf = (req: Request): ConsoleSession | undefined => sessions.get(req);

/** The CSRF token the request's forms carry: the session's, or the anonymous form cookie's. */
export const csrfTokenOf = (req: Request): string => sessions.get(req)?.csrfToken ?? formTokens.get(req)!;

export function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    // A value that is no valid percent-encoding is taken as it is (never a 500 for a bad cookie).
    const raw = part.slice(eq + 1).trim();
    let value = raw;
    try {
      value = decodeURIComponent(raw);
    } catch {
      // kept raw
    }
    cookies.set(part.slice(0, eq).trim(), value);
  }
  return cookies;
}

export function cookie(names: CookieNames, name: string, value: string, maxAgeSeconds?: number): string {
  return [
    `${name}=${value}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    names.secure ? 'Secure' : '',
    maxAgeSeconds === undefined ? '' : `Max-Age=${maxAgeSeconds}`,
  ]
    .filter(Boolean)
    .join('; ');
}

const sameToken = (a: string | undefined, b: string | undefined): boolean =>
  !!a && !!b && a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/**
 * Before every route: the session from its cookie (revoked, expired or idle sessions are none),
 * the anonymous form token, and the CSRF check of every POST: the form's `_csrf` field must be
 * the session's token, or, signed out, the form cookie's. A POST that fails it is answered 403
 * and reaches no route.
 */
export function consoleRequests(accounts: ConsoleAccountsService, names: CookieNames) {
  return (req: Request, res: Response, next: NextFunction): void => {
    void (async () => {
      const cookies = parseCookies(req.headers.cookie);
      const token = cookies.get(names.session);
      const session = token ? await accounts.session(token) : null;
      if (session) sessions.set(req, session);
      let form = cookies.get(names.form);
      if (!form || !/^[A-Za-z0-9_-]{32}$/.test(form)) {
        form = randomBytes(24).toString('base64url');
        res.append('Set-Cookie', cookie(names, names.form, form));
      }
      formTokens.set(req, form);
      if (req.method === 'POST') {
        const sent =
          typeof (req.body as Record<string, unknown> | undefined)?.['_csrf'] === 'string'
            ? String((req.body as Record<string, unknown>)['_csrf'])
            : undefined;
        const expected = session ? session.csrfToken : form;
        if (!sameToken(sent, expected)) {
          res
            .status(403)
            .type('text/plain')
            .send(
              'Refused: the form is missing its CSRF token or it does not match this session. Reload the page and try again.',
            );
          return;
        }
      }
      next();
    })().catch(next);
  };
}
