// Mail for the console's one-time links (DESIGN.md section 11, "invitations and links"; docs/console.md,
// "Mail"): a Mailer over SMTP (nodemailer) where SMTP_URL is set, and the console's messages.
export { MailError, type Mailer, type MailFailure, type MailMessage } from './mail-message.js';
export { mailerFromConfig, SmtpMailer } from './smtp-mailer.js';
export { MAILER, MailModule } from './mail.module.js';
export {
  describeDuration,
  escapeHtml,
  existingAccountInvitationMessage,
  invitationMessage,
  passwordResetMessage,
  type ExistingAccountInvitationMail,
  type InvitationMail,
  type PasswordResetMail,
} from './console-messages.js';
