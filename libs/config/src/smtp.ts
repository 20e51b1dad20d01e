// Mail for the console's one-time links (DESIGN.md section 11, "invitations and links";
// docs/console.md, "Mail"): where the SMTP server is and whom the mail is from, read next to the
// rest of the configuration (config.ts). SMTP_URL may hold a password: no problem reported here
// quotes its value.

type Env = Readonly<Record<string, string | undefined>>;

/** The submission server and the sender (SMTP_URL, MAIL_FROM, SMTP_INSECURE). */
export interface SmtpSettings {
  /** Host name or IP address (an IPv6 one without its brackets). */
  readonly host: string;
  /** SMTP_URL's port; without one, 465 for `smtps:` and 587 for `smtp:`. */
  readonly port: number;
  /** `smtps:`: TLS from the first byte. */
  readonly implicitTls: boolean;
  /** `smtp:`: the server must offer STARTTLS and its certificate is checked; false only with
   * SMTP_INSECURE=true, which sends in plain text (a relay on the same host or network). */
  readonly requireStartTls: boolean;
  /** SMTP_URL's user and password, percent-decoded; undefined: no AUTH. */
  readonly auth: { readonly user: string; readonly password: string } | undefined;
  /** MAIL_FROM, `address` or `Name <address>`: the From header and the envelope's sender. */
  readonly from: { readonly name: string | undefined; readonly address: string };
}

const ADDRESS = /^[^\s@<>,;:"()[\]\\]+@[^\s@<>,;:"()[\]\\]+$/;
const CONTROL = /\p{Cc}/u;

function value(env: Env, name: string): string | undefined {
  return env[name]?.trim() || undefined;
}

/** MAIL_FROM as a name and an address, or undefined with a problem. */
function parseFrom(raw: string, problems: string[]): SmtpSettings['from'] | undefined {
  const named = /^(.*?)\s*<([^<>]*)>$/.exec(raw);
  const name = named ? named[1]!.replace(/^"(.*)"$/, '$1').trim() || undefined : undefined;
  const address = named ? named[2]!.trim() : raw;
  if (CONTROL.test(raw) || !ADDRESS.test(address) || (name !== undefined && /[<>]/.test(name))) {
    problems.push(`MAIL_FROM must be an address or "Name <address>", got "${raw.replace(/\p{Cc}/gu, '?')}"`);
    return undefined;
  }
  return { name, address };
}

function decode(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}

/** SMTP_URL, MAIL_FROM and SMTP_INSECURE; undefined without SMTP_URL (then the other two must be
 * unset too). Problems name the variable and never quote SMTP_URL, which may hold a password. */
export function readSmtpSettings(env: Env, problems: string[]): SmtpSettings | undefined {
  const raw = value(env, 'SMTP_URL');
  const fromRaw = value(env, 'MAIL_FROM');
  const insecureRaw = value(env, 'SMTP_INSECURE')?.toLowerCase();
  const before = problems.length;
  if (insecureRaw !== undefined && insecureRaw !== 'true' && insecureRaw !== 'false')
    problems.push(`SMTP_INSECURE must be true or false, got "${insecureRaw}"`);
  const insecure = insecureRaw === 'true';
  if (raw === undefined) {
    if (fromRaw !== undefined) problems.push('MAIL_FROM is set but SMTP_URL is not: no mail would be sent');
    if (insecure) problems.push('SMTP_INSECURE is set but SMTP_URL is not');
    return undefined;
  }
  const shape = 'smtp://[user:password@]host[:port] or smtps://... (its value is not shown: it may hold a password)';
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    problems.push(`SMTP_URL must be a URL, ${shape}`);
  }
  if (url) {
    if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:')
      problems.push(`SMTP_URL must be an smtp: or smtps: URL, got protocol "${url.protocol}"`);
    if (!url.hostname) problems.push(`SMTP_URL names no host: ${shape}`);
    if ((url.pathname !== '' && url.pathname !== '/') || url.search || url.hash)
      problems.push(`SMTP_URL takes no path, query or fragment: ${shape}`);
    if (url.protocol === 'smtps:' && insecure)
      problems.push('SMTP_INSECURE=true goes with an smtp: URL; an smtps: URL is TLS from the first byte');
  }
  const user = url?.username ? decode(url.username) : undefined;
  const password = url?.password ? decode(url.password) : undefined;
  if (url && (user === undefined) !== (password === undefined)) {
    problems.push(
      `SMTP_URL takes a user and a password together (percent-encoded), or neither: ${url.username ? 'the password' : 'the user'} is missing or malformed`,
    );
  }
  const from = fromRaw === undefined ? undefined : parseFrom(fromRaw, problems);
  if (fromRaw === undefined)
    problems.push('MAIL_FROM is required when SMTP_URL is set (e.g. "Console <console@example.com>")');
  if (problems.length > before || !url || !from) return undefined;
  const implicitTls = url.protocol === 'smtps:';
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : implicitTls ? 465 : 587,
    implicitTls,
    requireStartTls: !implicitTls && !insecure,
    auth: user !== undefined && password !== undefined ? { user, password } : undefined,
    from,
  };
}
