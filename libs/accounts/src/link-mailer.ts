import { existingAccountInvitationMessage, invitationMessage, passwordResetMessage, type Mailer } from '#libs/mail';
import { CONSOLE_LIMITS, type LinkMailer } from './console-accounts.service.js';

/** The name the console's mails give the service (its pages' title). */
const SERVICE = 'Managed agent console';

/**
 * The console's links as mails (docs/console.md, "Mail"): a new account's invitation carries the
 * link that sets its first password; an existing account's carries the link it accepts with after
 * signing in; a reset carries its link. Null without SMTP: the inviter is shown the link instead.
 */
export function linkMailer(mailer: Mailer | null): LinkMailer {
  if (!mailer) return null;
  return (mail) =>
    mailer.send(
      mail.purpose === 'reset'
        ? passwordResetMessage({
            to: mail.to,
            service: SERVICE,
            link: mail.link,
            validForMs: CONSOLE_LIMITS.resetTtlMs,
          })
        : mail.purpose === 'invite'
          ? invitationMessage({
              to: mail.to,
              project: mail.projectName ?? '',
              service: SERVICE,
              role: mail.role ?? 'developer',
              link: mail.link,
              validForMs: CONSOLE_LIMITS.inviteTtlMs,
            })
          : existingAccountInvitationMessage({
              to: mail.to,
              project: mail.projectName ?? '',
              service: SERVICE,
              role: mail.role ?? 'developer',
              consoleUrl: mail.link,
            }),
    );
}
