import { createTransport } from 'nodemailer';
import type { AppConfig, SmtpSettings } from '#libs/config';
import { MailError, type MailFailure, type Mailer, type MailMessage } from './mail-message.js';

// An owner waits on the console's answer while an invitation is mailed: fail within seconds
// rather than nodemailer's default minutes.
const CONNECTION_TIMEOUT_MS = 10_000;
const SOCKET_TIMEOUT_MS = 30_000;

/** One plain address: a name, a list or a group would let one field reach several mailboxes. */
const ADDRESS = /^[^\s@<>,;:"()[\]\\]+@[^\s@<>,;:"()[\]\\]+$/;

/** What nodemailer attaches to the errors it rejects with. */
interface TransportError {
  readonly code?: string;
  readonly responseCode?: number;
  readonly response?: string;
  readonly message?: string;
  /** The SMTP command that failed (`CONN` for the connection itself). */
  readonly command?: string;
  /** The socket's own code behind ESOCKET (ECONNREFUSED, CERT_HAS_EXPIRED, ...). */
  readonly originalCode?: string;
}

const UNREACHABLE = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'EPROXY']);
/** Node's codes of a certificate that does not verify or a handshake that failed. */
const TLS_FAILURE = /CERT|SIGN|TLS|SSL|EPROTO/;

/** Mail over SMTP with nodemailer (DESIGN.md section 11, "invitations and links"): a connection
 * per message, to the server of SMTP_URL, from MAIL_FROM. */
export class SmtpMailer implements Mailer {
  private readonly transport;
  private readonly secrets: readonly string[];

  constructor(private readonly settings: SmtpSettings) {
    this.transport = createTransport({
      host: settings.host,
      port: settings.port,
      secure: settings.implicitTls,
      requireTLS: settings.requireStartTls,
      // SMTP_INSECURE=true: plain text, not an upgrade that a relay's self-signed certificate fails.
      ignoreTLS: !settings.implicitTls && !settings.requireStartTls,
      auth: settings.auth && { user: settings.auth.user, pass: settings.auth.password },
      connectionTimeout: CONNECTION_TIMEOUT_MS,
      greetingTimeout: CONNECTION_TIMEOUT_MS,
      socketTimeout: SOCKET_TIMEOUT_MS,
      // Nodemailer logs nothing, and reads no file or URL named in a message.
      logger: false,
      debug: false,
      disableFileAccess: true,
      disableUrlAccess: true,
    });
    this.secrets = settings.auth ? secretForms(settings.auth.user, settings.auth.password) : [];
  }

  async send(message: MailMessage): Promise<void> {
    if (!ADDRESS.test(message.to))
      throw new MailError('invalid_recipient', 'the recipient is not one plain email address', false);
    const { from } = this.settings;
    try {
      await this.transport.sendMail({
        from: from.name ? { name: from.name, address: from.address } : from.address,
        to: message.to,
        // Explicit, so that nothing in the headers can add a recipient.
        envelope: { from: from.address, to: [message.to] },
        subject: message.subject,
        text: message.text,
        ...(message.html === undefined ? {} : { html: message.html }),
      });
    } catch (e) {
      throw this.failure(e as TransportError, message.to);
    }
  }

  /** The MailError for nodemailer's error: the server's words with the credentials and the
   * recipient taken out (a log line may carry it), and no `cause`. */
  private failure(e: TransportError, recipient: string): MailError {
    const code = e.code ?? '';
    const responseCode = typeof e.responseCode === 'number' ? e.responseCode : undefined;
    const server = `the SMTP server ${this.settings.host}:${this.settings.port}`;
    const said = this.scrub(e.response ?? e.message ?? '', recipient);
    const fail = (reason: MailFailure, what: string, transient: boolean) =>
      new MailError(reason, `${what}${said ? `: ${said}` : ''}`, transient, responseCode);
    // A 4xx reply (RFC 5321's transient negative completion) may go through later; a 5xx will not.
    const replyTransient = responseCode !== undefined && responseCode >= 400 && responseCode < 500;
    if (code === 'EENVELOPE' && responseCode !== undefined)
      return fail('recipient_refused', `${server} refused the recipient`, replyTransient);
    if (code === 'EAUTH' || code === 'ENOAUTH')
      return fail('auth_failed', `${server} refused the credentials of SMTP_URL`, false);
    if (code === 'ETLS' || e.command === 'STARTTLS')
      return fail(
        'tls_failed',
        `${server} did not take STARTTLS, which an smtp: URL requires unless SMTP_INSECURE=true`,
        false,
      );
    if (TLS_FAILURE.test(e.originalCode ?? ''))
      return fail('tls_failed', `TLS with ${server} failed (its certificate is checked)`, false);
    if (UNREACHABLE.has(code))
      return fail('unreachable', `${server} could not be reached, or dropped the connection`, true);
    return fail('refused', `${server} refused the mail`, replyTransient);
  }

  private scrub(text: string, recipient: string): string {
    let out = text.replace(/\p{Cc}+/gu, ' ').trim();
    for (const secret of this.secrets) out = out.split(secret).join('[redacted]');
    return out.split(recipient).join('[recipient]').slice(0, 300);
  }
}

/** The password as it could appear in a server's reply: itself, percent-encoded, and within the
 * base64 of AUTH PLAIN and AUTH LOGIN. */
function secretForms(user: string, password: string): string[] {
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
  return [password, encodeURIComponent(password), b64(password), b64(`\0${user}\0${password}`)].filter(
    (s) => s.length >= 3,
  );
}

/** The mailer of the configuration, or null where SMTP is not configured (no SMTP_URL): then the
 * console shows a new account's link to the inviting owner instead. */
export function mailerFromConfig(config: Pick<AppConfig, 'smtp'>): Mailer | null {
  return config.smtp ? new SmtpMailer(config.smtp) : null;
}
