import { ConfigError, loadConfig } from './config.js';

const key = Buffer.alloc(32, 7).toString('base64');
const valid = {
  DATABASE_URL: 'postgres://mas@127.0.0.1:55432/mas',
  KAFKA_BROKERS: '127.0.0.1:19092',
  MAS_MASTER_KEY: key,
  MAS_API_KEY_PEPPER: key,
  MAS_PAYLOAD_KEYS: `k1:${key}`,
};

function problemsOf(env: Record<string, string | undefined>): readonly string[] {
  try {
    loadConfig({ ...valid, ...env });
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('SMTP settings (SMTP_URL, MAIL_FROM, SMTP_INSECURE)', () => {
  it('are undefined without SMTP_URL: no mail, links are shown instead', () => {
    expect(loadConfig(valid).smtp).toBeUndefined();
  });

  it('read an smtp: URL as STARTTLS required on 587, with percent-decoded credentials', () => {
    const config = loadConfig({
      ...valid,
      SMTP_URL: 'smtp://mailer%40example.com:p%40ss%3Aw%2Ford@smtp.example.com',
      MAIL_FROM: 'Managed agent console <console@example.com>',
    });
    expect(config.smtp).toEqual({
      host: 'smtp.example.com',
      port: 587,
      implicitTls: false,
      requireStartTls: true,
      auth: { user: 'mailer@example.com', password: 'p@ss:w/ord' },
      from: { name: 'Managed agent console', address: 'console@example.com' },
    });
  });

  it('read an smtps: URL as TLS from the first byte on 465, and an explicit port and IPv6 host', () => {
    expect(loadConfig({ ...valid, SMTP_URL: 'smtps://u:p@smtp.example.com', MAIL_FROM: 'c@example.com' }).smtp).toEqual(
      expect.objectContaining({ port: 465, implicitTls: true, requireStartTls: false }),
    );
    expect(
      loadConfig({
        ...valid,
        SMTP_URL: 'smtp://[::1]:2525',
        MAIL_FROM: '"Console" <c@example.com>',
        SMTP_INSECURE: 'true',
      }).smtp,
    ).toEqual({
      host: '::1',
      port: 2525,
      implicitTls: false,
      requireStartTls: false,
      auth: undefined,
      from: { name: 'Console', address: 'c@example.com' },
    });
  });

  it('name a bad SMTP_URL without quoting it, since it may hold a password', () => {
    const secret = 'hunter2-very-secret';
    const cases = [
      `http://u:${secret}@smtp.example.com`,
      `smtp://u:${secret}@`,
      `smtp://u:${secret}@smtp.example.com/path?x=1`,
      `smtp://u:${secret}@smtp.example.com:99999`,
      `smtp://:${secret}@smtp.example.com`,
      `smtp://u:%E0%A4%A${secret}@smtp.example.com`,
    ];
    for (const url of cases) {
      const problems = problemsOf({ SMTP_URL: url, MAIL_FROM: 'c@example.com' });
      expect(problems).toEqual([expect.stringContaining('SMTP_URL')]);
      expect(problems.join('\n')).not.toContain(secret);
    }
  });

  it('require MAIL_FROM with SMTP_URL, a well-formed one, and neither MAIL_FROM nor SMTP_INSECURE without it', () => {
    expect(problemsOf({ SMTP_URL: 'smtp://smtp.example.com' })).toEqual([
      expect.stringContaining('MAIL_FROM is required'),
    ]);
    for (const from of ['console', 'a@b.example, c@d.example', 'Console <>', 'a@b.example\r\nBcc: x@y.example']) {
      expect(problemsOf({ SMTP_URL: 'smtp://smtp.example.com', MAIL_FROM: from })).toEqual([
        expect.stringContaining('MAIL_FROM must be'),
      ]);
    }
    expect(problemsOf({ MAIL_FROM: 'c@example.com', SMTP_INSECURE: 'true' })).toEqual([
      expect.stringContaining('MAIL_FROM is set but SMTP_URL is not'),
      expect.stringContaining('SMTP_INSECURE is set but SMTP_URL is not'),
    ]);
  });

  it('refuse SMTP_INSECURE with an smtps: URL, and a value other than true or false', () => {
    expect(
      problemsOf({ SMTP_URL: 'smtps://smtp.example.com', MAIL_FROM: 'c@example.com', SMTP_INSECURE: 'true' }),
    ).toEqual([expect.stringContaining('SMTP_INSECURE=true goes with an smtp: URL')]);
    expect(
      problemsOf({ SMTP_URL: 'smtp://smtp.example.com', MAIL_FROM: 'c@example.com', SMTP_INSECURE: 'yes' }),
    ).toEqual([expect.stringContaining('SMTP_INSECURE must be true or false')]);
  });
});
