// The SMTP mailer against a real SMTP server (smtp-server, from nodemailer's project) on loopback:
// what arrives, and the errors of a server that refuses or is gone, none of which holds the password.
import { loadConfig } from '#libs/config';
import { startSmtpServer, TEST_MAIL_FROM, type TestSmtpServer } from '../../../test/support/smtp-server.js';
import { startTcpProxy } from '../../../test/support/tcp-proxy.js';
import { existingAccountInvitationMessage, invitationMessage, passwordResetMessage } from './console-messages.js';
import { MailError, type Mailer } from './mail-message.js';
import { mailerFromConfig } from './smtp-mailer.js';

const PASSWORD = 'pa55-w0rd/with:odd@chars';
const auth = { user: 'console@mail.test', password: PASSWORD };
const DAY = 24 * 60 * 60 * 1000;
const link = 'http://127.0.0.1:3001/invitations/accept#token=Zm9vYmFyYmF6cXV4';

/** The mailer of the apps' configuration with these SMTP variables over the test environment's. */
function mailerFor(env: Readonly<Record<string, string>>): Mailer {
  const { SMTP_URL: _url, MAIL_FROM: _from, SMTP_INSECURE: _insecure, ...rest } = process.env;
  const mailer = mailerFromConfig(loadConfig({ ...rest, ...env }));
  if (!mailer) throw new Error('expected SMTP to be configured');
  return mailer;
}

/** The MailError `send` rejects with. */
async function failureOf(send: Promise<void>): Promise<MailError> {
  const error = await send.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(MailError);
  return error as MailError;
}

/** The password as it travels or could be echoed: itself, percent-encoded, in AUTH PLAIN's and AUTH LOGIN's base64. */
const formsOf = (password: string): string[] => [
  password,
  encodeURIComponent(password),
  Buffer.from(password).toString('base64'),
  Buffer.from(`\0${auth.user}\0${password}`).toString('base64'),
];

/** Every way an error could reach a log line. */
const printed = (e: MailError): string => [String(e), e.stack, JSON.stringify(e), JSON.stringify({ ...e })].join('\n');

const invitation = (to: string) =>
  invitationMessage({
    to,
    project: 'Acme <Labs>',
    service: 'Managed agent console',
    role: 'developer',
    link,
    validForMs: 7 * DAY,
  });

let output: string[] = [];
const restore: (() => void)[] = [];

// Whatever the process writes while mailing is kept, to show the password is never in it.
beforeEach(() => {
  output = [];
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream);
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      output.push(String(chunk));
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof stream.write;
    restore.push(() => (stream.write = write));
  }
  /* eslint-disable no-console -- the console is what is watched here, not written to */
  for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    const original = console[method];
    console[method] = (...args: unknown[]) => {
      output.push(args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' '));
    };
    restore.push(() => (console[method] = original));
  }
  /* eslint-enable no-console */
});
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
  for (const form of formsOf(PASSWORD)) expect(output.join('')).not.toContain(form);
});

describe('SmtpMailer over a real SMTP server', () => {
  let server: TestSmtpServer;

  beforeAll(async () => {
    server = await startSmtpServer({ auth, refuseRecipients: ['gone@example.com'] });
  });
  afterAll(async () => {
    await server.close();
  });

  it('is null where SMTP is not configured', () => {
    const { SMTP_URL: _url, MAIL_FROM: _from, SMTP_INSECURE: _insecure, ...rest } = process.env;
    expect(mailerFromConfig(loadConfig(rest))).toBeNull();
  });

  it('delivers an invitation: recipient, sender, subject and link, text and HTML, after AUTH', async () => {
    await mailerFor(server.env).send(invitation('new@example.com'));
    const mail = await server.mailTo('new@example.com');
    expect(mail.envelope).toEqual({ from: 'console@mail.test', to: ['new@example.com'] });
    expect(mail.user).toBe(auth.user);
    expect(mail.from).toEqual(['console@mail.test']);
    expect(mail.raw).toContain(`From: ${TEST_MAIL_FROM}`);
    expect(mail.to).toEqual(['new@example.com']);
    expect(mail.subject).toBe('Invitation to "Acme <Labs>" on Managed agent console');
    expect(mail.text).toContain(`Set your password: ${link}`);
    expect(mail.text).toContain('The link works once, for 7 days.');
    expect(mail.html).toContain(`href="${link}"`);
    expect(mail.html).toContain('<strong>Acme &lt;Labs&gt;</strong>');
  });

  it('delivers a password reset and an invitation to an existing account, which carries no link', async () => {
    const mailer = mailerFor(server.env);
    await mailer.send(
      passwordResetMessage({
        to: 'reset@example.com',
        service: 'Managed agent console',
        link,
        validForMs: 60 * 60 * 1000,
      }),
    );
    await mailer.send(
      existingAccountInvitationMessage({
        to: 'known@example.com',
        project: 'Acme',
        service: 'Managed agent console',
        role: 'viewer',
        consoleUrl: 'http://127.0.0.1:3001',
      }),
    );
    const reset = await server.mailTo('reset@example.com');
    expect(reset.subject).toBe('Reset your password on Managed agent console');
    expect(reset.text).toContain(`Set a new password: ${link}`);
    expect(reset.text).toContain('for 1 hour.');
    const known = await server.mailTo('known@example.com');
    expect(known.text).toContain('Sign in with your password to accept the invitation. http://127.0.0.1:3001/');
    expect(known.raw).not.toContain('token');
  });

  it('rejects a refused recipient with recipient_refused, the reply code, and neither the address nor the password', async () => {
    const error = await failureOf(mailerFor(server.env).send(invitation('gone@example.com')));
    expect(error).toMatchObject({ reason: 'recipient_refused', responseCode: 550, transient: false });
    expect(error.message).toMatch(/^the SMTP server 127\.0\.0\.1:\d+ refused the recipient: .*550/);
    expect(printed(error)).not.toContain('gone@example.com');
    expect(printed(error)).not.toContain(PASSWORD);
    expect(server.received.filter((m) => m.envelope.to.includes('gone@example.com'))).toEqual([]);
  });

  it('rejects wrong credentials with auth_failed, and no form of the password it sent', async () => {
    const wrong = 'wr0ng-but-secret-Passw0rd';
    const url = new URL(server.env.SMTP_URL!);
    url.password = encodeURIComponent(wrong);
    const error = await failureOf(
      mailerFor({ ...server.env, SMTP_URL: url.href }).send(invitation('new2@example.com')),
    );
    expect(error).toMatchObject({ reason: 'auth_failed', responseCode: 535 });
    expect(error.message).toContain('refused the credentials of SMTP_URL');
    for (const form of formsOf(wrong)) {
      expect(printed(error)).not.toContain(form);
      expect(output.join('')).not.toContain(form);
    }
  });

  it('refuses a recipient that is not one plain address, sending nothing', async () => {
    const before = server.received.length;
    for (const to of ['a@example.com, b@example.com', 'Name <a@example.com>', 'a@example.com\r\nBcc: b@example.com']) {
      const error = await failureOf(mailerFor(server.env).send({ ...invitation('x@example.com'), to }));
      expect(error).toMatchObject({ reason: 'invalid_recipient', transient: false });
    }
    expect(server.received.length).toBe(before);
  });

  it('rejects a server that is down with unreachable (transient), and sends again once it is back', async () => {
    const proxy = await startTcpProxy({ host: server.host, port: server.port });
    try {
      const env = { ...server.env, SMTP_URL: server.env.SMTP_URL!.replace(`:${server.port}`, `:${proxy.port}`) };
      await proxy.cut();
      const error = await failureOf(mailerFor(env).send(invitation('later@example.com')));
      expect(error).toMatchObject({ reason: 'unreachable', transient: true });
      expect(error.message).toContain(`the SMTP server 127.0.0.1:${proxy.port} could not be reached`);
      expect(error.message).toContain('ECONNREFUSED');
      expect(printed(error)).not.toContain(PASSWORD);
      await proxy.restore();
      await mailerFor(env).send(invitation('later@example.com'));
      expect((await server.mailTo('later@example.com')).text).toContain(link);
    } finally {
      await proxy.close();
    }
  });
});

describe('SmtpMailer and TLS', () => {
  const servers: TestSmtpServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });
  const start = async (tls: 'plain' | 'starttls' | 'implicit') => {
    const server = await startSmtpServer({ auth, tls });
    servers.push(server);
    return server;
  };

  it('refuses to send over smtp: without STARTTLS unless SMTP_INSECURE=true', async () => {
    const server = await start('plain');
    const { SMTP_INSECURE: _insecure, ...strict } = server.env;
    const error = await failureOf(mailerFor(strict).send(invitation('tls@example.com')));
    expect(error).toMatchObject({ reason: 'tls_failed', transient: false });
    expect(error.message).toContain('did not take STARTTLS, which an smtp: URL requires unless SMTP_INSECURE=true');
    expect(printed(error)).not.toContain(PASSWORD);
    expect(server.received).toEqual([]);
  });

  it("checks the server's certificate, over STARTTLS and over smtps:", async () => {
    for (const mode of ['starttls', 'implicit'] as const) {
      const server = await start(mode);
      const error = await failureOf(mailerFor(server.env).send(invitation('tls@example.com')));
      // smtp-server's built-in certificate is self-signed (and expired): no system root vouches for it.
      expect(error).toMatchObject({ reason: 'tls_failed', transient: false });
      expect(error.message).toMatch(
        /^TLS with the SMTP server 127\.0\.0\.1:\d+ failed \(its certificate is checked\): /,
      );
      expect(printed(error)).not.toContain(PASSWORD);
      expect(server.received).toEqual([]);
    }
  });
});
