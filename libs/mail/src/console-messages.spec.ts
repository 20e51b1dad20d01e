import {
  describeDuration,
  escapeHtml,
  existingAccountInvitationMessage,
  invitationMessage,
  passwordResetMessage,
} from './console-messages.js';

const DAY = 24 * 60 * 60 * 1000;
const HOUR = 60 * 60 * 1000;
const link = 'https://console.example.com/invitations/accept?token=AbC_123-xyz';

/** Every URL a text holds. */
const urlsIn = (text: string): string[] => text.match(/https?:\/\/[^\s"<>]+/g) ?? [];

describe('invitationMessage', () => {
  const mail = invitationMessage({
    to: 'new@example.com',
    project: 'Acme',
    service: 'Managed agent console',
    role: 'developer',
    link,
    validForMs: 7 * DAY,
  });

  it('says where, as what, the link and that it works once for 7 days, in text and HTML', () => {
    expect(mail.to).toBe('new@example.com');
    expect(mail.subject).toBe('Invitation to "Acme" on Managed agent console');
    expect(mail.text).toContain('You have been invited to "Acme" on Managed agent console as developer.');
    expect(mail.text).toContain(`Set your password: ${link}\n`);
    expect(mail.text).toContain('The link works once, for 7 days.');
    expect(mail.html).toContain('<strong>Acme</strong> on Managed agent console as developer.');
    expect(mail.html).toContain('href="https://console.example.com/invitations/accept?token=AbC_123-xyz"');
    expect(mail.html).toContain('The link works once, for 7 days.');
  });

  it("escapes the project's name in HTML and keeps it on one line in the subject and text", () => {
    const hostile = invitationMessage({
      to: 'new@example.com',
      project: '<img src=x onerror=alert(1)> & "Co"\r\nBcc: victim@example.com',
      service: 'Managed agent console',
      role: 'viewer',
      link,
      validForMs: 7 * DAY,
    });
    expect(hostile.html).not.toContain('<img');
    expect(hostile.html).toContain('&lt;img src=x onerror=alert(1)&gt; &amp; &quot;Co&quot; Bcc: victim@example.com');
    expect(hostile.subject).not.toMatch(/[\r\n]/);
    expect(hostile.text.split('\n').filter((line) => line.startsWith('Bcc:'))).toEqual([]);
  });

  it('escapes a link that carries HTML-special characters in its attribute', () => {
    const odd = invitationMessage({
      to: 'a@example.com',
      project: 'P',
      service: 'S',
      role: 'owner',
      link: 'https://console.example.com/i?a=1&b="><script>',
      validForMs: DAY,
    });
    expect(odd.html).not.toContain('<script>');
    expect(odd.html).toContain('href="https://console.example.com/i?a=1&amp;b=%22%3E%3Cscript%3E"');
    expect(odd.text).toContain('for 1 day.');
  });

  it('refuses a link that is not an http(s) URL', () => {
    for (const bad of ['javascript:alert(1)', '/relative/path', 'not a url']) {
      expect(() =>
        invitationMessage({
          to: 'a@example.com',
          project: 'P',
          service: 'S',
          role: 'owner',
          link: bad,
          validForMs: DAY,
        }),
      ).toThrow(RangeError);
    }
  });
});

describe('existingAccountInvitationMessage', () => {
  const mail = existingAccountInvitationMessage({
    to: 'known@example.com',
    project: 'Acme <b>',
    service: 'Managed agent console',
    role: 'viewer',
    consoleUrl: 'https://console.example.com',
  });

  it('carries no link but the console: the account signs in with its own password to accept', () => {
    expect(mail.subject).toBe('Invitation to "Acme <b>" on Managed agent console');
    expect(mail.text).toContain('as viewer.');
    expect(mail.text).toContain('Sign in with your password to accept the invitation. https://console.example.com/');
    expect(urlsIn(mail.text)).toEqual(['https://console.example.com/']);
    expect(urlsIn(mail.html ?? '')).toEqual(['https://console.example.com/', 'https://console.example.com/']);
    expect(mail.text).not.toMatch(/password:|token|works once/i);
    expect(mail.html).toContain('<strong>Acme &lt;b&gt;</strong>');
  });
});

describe('passwordResetMessage', () => {
  it('gives the link and says it works once, for 1 hour', () => {
    const mail = passwordResetMessage({
      to: 'known@example.com',
      service: 'Managed agent console',
      link: 'https://console.example.com/reset?token=t0k',
      validForMs: HOUR,
    });
    expect(mail.subject).toBe('Reset your password on Managed agent console');
    expect(mail.text).toContain('Set a new password: https://console.example.com/reset?token=t0k\n');
    expect(mail.text).toContain('The link works once, for 1 hour.');
    expect(mail.html).toContain('href="https://console.example.com/reset?token=t0k"');
    expect(mail.html).toContain('The link works once, for 1 hour.');
  });
});

describe('describeDuration', () => {
  it('names the largest unit that divides the duration exactly', () => {
    expect(describeDuration(7 * DAY)).toBe('7 days');
    expect(describeDuration(HOUR)).toBe('1 hour');
    expect(describeDuration(36 * HOUR)).toBe('36 hours');
    expect(describeDuration(90 * 60_000)).toBe('90 minutes');
    expect(describeDuration(60_000)).toBe('1 minute');
  });

  it('refuses what is not a positive whole number of minutes', () => {
    for (const bad of [0, -HOUR, 1500, Number.NaN, 1.5 * 60_000])
      expect(() => describeDuration(bad)).toThrow(RangeError);
  });
});

describe('escapeHtml', () => {
  it('escapes the five characters that matter in content and attributes', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});
