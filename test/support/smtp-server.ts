import type { AddressInfo } from 'node:net';
import { simpleParser, type AddressObject } from 'mailparser';
import { SMTPServer, type SMTPServerAddress } from 'smtp-server';
import { eventually } from './eventually.js';

/** A mail as the server received it: the envelope, and the message parsed by mailparser. */
export interface ReceivedMail {
  /** MAIL FROM and RCPT TO. */
  readonly envelope: { readonly from: string; readonly to: readonly string[] };
  /** The user the client authenticated as, if it did. */
  readonly user: string | undefined;
  /** The From and To headers' addresses. */
  readonly from: readonly string[];
  readonly to: readonly string[];
  readonly subject: string;
  readonly text: string;
  /** The HTML part, if the mail had one. */
  readonly html: string | undefined;
  /** The whole message as sent, headers included. */
  readonly raw: string;
}

export interface TestSmtpServerOptions {
  /** Require AUTH with this user and password (then the client must authenticate). */
  readonly auth?: { readonly user: string; readonly password: string };
  /** RCPT TO of these addresses is refused with 550, as a server refuses an unknown mailbox. */
  readonly refuseRecipients?: readonly string[];
  /** `plain` (default): no STARTTLS offered, as a relay the apps reach with SMTP_INSECURE=true;
   * `starttls`: STARTTLS offered; `implicit`: TLS from the first byte. Both TLS modes use
   * smtp-server's built-in self-signed certificate, which a client that checks certificates refuses. */
  readonly tls?: 'plain' | 'starttls' | 'implicit';
}

/** A real SMTP server (the `smtp-server` package) on a free loopback port that keeps what it receives. */
export interface TestSmtpServer {
  readonly host: string;
  readonly port: number;
  /** The variables that point the apps at it: SMTP_URL (with the credentials of `auth`), MAIL_FROM
   * and, for `plain`, SMTP_INSECURE=true. */
  readonly env: Readonly<Record<string, string>>;
  readonly received: ReceivedMail[];
  /** The first mail received for `to` (envelope recipient), waiting for it up to `timeoutMs`. */
  mailTo(to: string, timeoutMs?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

const addresses = (header: AddressObject | AddressObject[] | undefined): string[] =>
  (Array.isArray(header) ? header : header ? [header] : []).flatMap((h) => h.value.map((a) => a.address ?? ''));

export const TEST_MAIL_FROM = 'Managed agent console <console@mail.test>';

/** Starts the server; `close()` stops it. */
export async function startSmtpServer(options: TestSmtpServerOptions = {}): Promise<TestSmtpServer> {
  const received: ReceivedMail[] = [];
  const tls = options.tls ?? 'plain';
  const refused = new Set((options.refuseRecipients ?? []).map((a) => a.toLowerCase()));
  const server = new SMTPServer({
    secure: tls === 'implicit',
    disabledCommands: tls === 'plain' ? ['STARTTLS'] : [],
    authOptional: !options.auth,
    allowInsecureAuth: true,
    disableReverseLookup: true,
    logger: false,
    onAuth(auth, _session, callback) {
      const ok = options.auth && auth.username === options.auth.user && auth.password === options.auth.password;
      if (ok) callback(null, { user: auth.username });
      else callback(Object.assign(new Error('Authentication failed'), { responseCode: 535 }));
    },
    onRcptTo(address: SMTPServerAddress, _session, callback) {
      if (refused.has(address.address.toLowerCase()))
        callback(Object.assign(new Error(`5.1.1 <${address.address}>: mailbox unavailable`), { responseCode: 550 }));
      else callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        simpleParser(raw).then(
          (mail) => {
            received.push({
              envelope: {
                from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
                to: session.envelope.rcptTo.map((r) => r.address),
              },
              user: typeof session.user === 'string' ? session.user : undefined,
              from: addresses(mail.from),
              to: addresses(mail.to),
              subject: mail.subject ?? '',
              text: mail.text ?? '',
              html: typeof mail.html === 'string' ? mail.html : undefined,
              raw: raw.toString('utf8'),
            });
            callback();
          },
          (e: unknown) => callback(e instanceof Error ? e : new Error(String(e))),
        );
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  // A client that drops its connection is an error event on the server: it must not end the test.
  server.on('error', () => undefined);
  const { port } = server.server.address() as AddressInfo;
  const credentials = options.auth
    ? `${encodeURIComponent(options.auth.user)}:${encodeURIComponent(options.auth.password)}@`
    : '';
  return {
    host: '127.0.0.1',
    port,
    env: {
      SMTP_URL: `${tls === 'implicit' ? 'smtps' : 'smtp'}://${credentials}127.0.0.1:${port}`,
      MAIL_FROM: TEST_MAIL_FROM,
      ...(tls === 'plain' ? { SMTP_INSECURE: 'true' } : {}),
    },
    received,
    mailTo: (to, timeoutMs = 10_000) =>
      eventually(async () => {
        const mail = received.find((m) => m.envelope.to.includes(to));
        if (!mail) throw new Error(`no mail to ${to} yet (received: ${received.length})`);
        return mail;
      }, timeoutMs),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
