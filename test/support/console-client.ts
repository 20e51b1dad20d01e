/** A page or a form's answer as the console sent it (redirects are not followed). */
export interface ConsoleAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** Where a redirect points (path), or null. */
  readonly location: string | null;
  /** How long the answer took, in ms. */
  readonly ms: number;
}

/**
 * One browser's worth of the customer console over plain HTTP, as an attacker scripts it: a
 * cookie jar, the CSRF token of the last page, and forms posted urlencoded. The security tier
 * (test/security) drives the console with it; the browser tests use Playwright.
 */
export class ConsoleClient {
  private readonly cookies = new Map<string, string>();
  private csrf = '';

  constructor(
    readonly baseUrl: string,
    /** Headers sent with every request (e.g. X-Forwarded-For behind a proxy). */
    private readonly headers: Record<string, string> = {},
  ) {}

  /** The CSRF token of the last page read. */
  get csrfToken(): string {
    return this.csrf;
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<ConsoleAnswer> {
    return this.send('GET', path, undefined, headers);
  }

  /** Posts a form with the last page's CSRF token (unless `fields` names its own `_csrf`). */
  async post(
    path: string,
    fields: Record<string, string> = {},
    headers: Record<string, string> = {},
  ): Promise<ConsoleAnswer> {
    if (!this.csrf) await this.get('/sign-in');
    return this.send('POST', path, new URLSearchParams({ _csrf: this.csrf, ...fields }).toString(), headers);
  }

  /** Signs in; the answer is the sign-in form's (303 on success). */
  async signIn(email: string, password: string, headers: Record<string, string> = {}): Promise<ConsoleAnswer> {
    await this.get('/sign-in', headers);
    const answer = await this.post('/sign-in', { email, password }, headers);
    // Signed in: the next page carries the session's CSRF token.
    if (answer.status === 303) await this.get('/account');
    return answer;
  }

  /** Sets a new account's password with a one-time link (invitation or reset). */
  async setPassword(link: string, password: string): Promise<ConsoleAnswer> {
    const path = new URL(link).pathname;
    await this.get(path);
    return this.post(path, { password, confirm: password });
  }

  private async send(
    method: string,
    path: string,
    body: string | undefined,
    extra: Record<string, string>,
  ): Promise<ConsoleAnswer> {
    const headers: Record<string, string> = { ...this.headers, ...extra };
    if (this.cookies.size) headers['cookie'] = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const started = performance.now();
    const res = await fetch(`${this.baseUrl}${path}`, { method, headers, body, redirect: 'manual' });
    const text = await res.text();
    const ms = performance.now() - started;
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /Max-Age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const token = /name="_csrf" value="([^"]+)"/.exec(text)?.[1];
    if (token) this.csrf = token;
    const location = res.headers.get('location');
    return { status: res.status, headers: res.headers, text, location, ms };
  }
}

/** The one-time link a page shows (the members page after an invitation), or null. */
export const linkIn = (text: string): string | null =>
  /https?:\/\/[^\s<"]+\/(?:invite|reset)\/[A-Za-z0-9_-]{43}/.exec(text)?.[0] ?? null;
