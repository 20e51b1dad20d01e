// The console's mails (DESIGN.md section 11, "invitations and links"): an invitation with a link
// to set a password (a new account), an invitation without one (an account that already exists
// accepts by signing in with its own password), and a password reset. Pure: the caller owns the
// links, their lifetimes (CONSOLE_LIMITS) and the names.
import type { MailMessage } from './mail-message.js';

/** An invitation for an address with no account yet: the link sets its password. */
export interface InvitationMail {
  readonly to: string;
  /** The project's name, as its owner typed it. */
  readonly project: string;
  /** The service's name as its users know it, e.g. "Managed agent console". */
  readonly service: string;
  readonly role: string;
  /** The one-time link. */
  readonly link: string;
  /** How long the link works, in milliseconds (a whole number of minutes). */
  readonly validForMs: number;
}

/** An invitation for an address that already has an account: no link, it signs in to accept. */
export interface ExistingAccountInvitationMail {
  readonly to: string;
  readonly project: string;
  readonly service: string;
  readonly role: string;
  /** Where the console is (CONSOLE_PUBLIC_URL). */
  readonly consoleUrl: string;
}

/** A password reset: the link sets a new password. */
export interface PasswordResetMail {
  readonly to: string;
  readonly service: string;
  readonly link: string;
  readonly validForMs: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** "7 days", "1 hour", "90 minutes": the largest unit that divides the duration exactly. */
export function describeDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms <= 0 || ms % MINUTE !== 0)
    throw new RangeError(`a link's lifetime must be a positive whole number of minutes, got ${ms} ms`);
  const [n, unit] =
    ms % DAY === 0 ? [ms / DAY, 'day'] : ms % HOUR === 0 ? [ms / HOUR, 'hour'] : [ms / MINUTE, 'minute'];
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/** Text from a user or an operator on one line: control characters (a line break in a project's
 * name) become spaces, so nothing they type starts a line or a header of its own. */
function oneLine(text: string): string {
  return text.replace(/[\p{Cc}\u2028\u2029]+/gu, ' ').trim();
}

/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );
}

/** A link goes into the mail only as an http(s) URL: anything else in its place is a bug upstream. */
function httpUrl(link: string, what: string): string {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    throw new RangeError(`${what} must be an absolute http(s) URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new RangeError(`${what} must be an http(s) URL`);
  return url.href;
}

function html(paragraphs: readonly string[]): string {
  return [
    '<!doctype html>',
    '<html><body style="font-family: system-ui, sans-serif; line-height: 1.5; color: #1a1a1a">',
    ...paragraphs.map((p) => `<p>${p}</p>`),
    '</body></html>',
    '',
  ].join('\n');
}

function button(href: string, label: string): string {
  return `<a href="${escapeHtml(href)}" style="display: inline-block; padding: 8px 16px; background: #1f4fd1; color: #ffffff; text-decoration: none; border-radius: 4px">${escapeHtml(label)}</a>`;
}

const IGNORE_INVITATION = 'If you did not expect this invitation, you can ignore this mail.';

/** The invitation of a new account: "Set your password: <link>", working once, for `validForMs`. */
export function invitationMessage(mail: InvitationMail): MailMessage {
  const project = oneLine(mail.project);
  const service = oneLine(mail.service);
  const role = oneLine(mail.role);
  const link = httpUrl(mail.link, 'the invitation link');
  const validFor = describeDuration(mail.validForMs);
  const invited = `You have been invited to "${project}" on ${service} as ${role}.`;
  const once = `The link works once, for ${validFor}.`;
  return {
    to: mail.to,
    subject: `Invitation to "${project}" on ${service}`,
    text: [invited, `Set your password: ${link}`, once, IGNORE_INVITATION, ''].join('\n\n'),
    html: html([
      `You have been invited to <strong>${escapeHtml(project)}</strong> on ${escapeHtml(service)} as ${escapeHtml(role)}.`,
      button(link, 'Set your password'),
      `${escapeHtml(once)} If the button does not work, open this address: <br>${escapeHtml(link)}`,
      escapeHtml(IGNORE_INVITATION),
    ]),
  };
}

/** The invitation of an account that already exists: no link, "sign in to accept" at the console. */
export function existingAccountInvitationMessage(mail: ExistingAccountInvitationMail): MailMessage {
  const project = oneLine(mail.project);
  const service = oneLine(mail.service);
  const role = oneLine(mail.role);
  const consoleUrl = httpUrl(mail.consoleUrl, 'the console URL');
  const invited = `You have been invited to "${project}" on ${service} as ${role}.`;
  const accept = 'Sign in with your password to accept the invitation.';
  return {
    to: mail.to,
    subject: `Invitation to "${project}" on ${service}`,
    text: [invited, `${accept} ${consoleUrl}`, IGNORE_INVITATION, ''].join('\n\n'),
    html: html([
      `You have been invited to <strong>${escapeHtml(project)}</strong> on ${escapeHtml(service)} as ${escapeHtml(role)}.`,
      `${escapeHtml(accept)} <a href="${escapeHtml(consoleUrl)}">${escapeHtml(consoleUrl)}</a>`,
      escapeHtml(IGNORE_INVITATION),
    ]),
  };
}

/** A password reset: "Set a new password: <link>", working once, for `validForMs`. */
export function passwordResetMessage(mail: PasswordResetMail): MailMessage {
  const service = oneLine(mail.service);
  const link = httpUrl(mail.link, 'the password reset link');
  const once = `The link works once, for ${describeDuration(mail.validForMs)}.`;
  const asked = `A password reset was asked for your account on ${service}.`;
  const ignore = 'If you did not ask for it, you can ignore this mail: your password stays as it is.';
  return {
    to: mail.to,
    subject: `Reset your password on ${service}`,
    text: [asked, `Set a new password: ${link}`, once, ignore, ''].join('\n\n'),
    html: html([
      escapeHtml(asked),
      button(link, 'Set a new password'),
      `${escapeHtml(once)} If the button does not work, open this address: <br>${escapeHtml(link)}`,
      escapeHtml(ignore),
    ]),
  };
}
