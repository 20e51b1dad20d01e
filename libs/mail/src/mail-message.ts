/** One mail to one recipient: plain text, and optionally the same as simple HTML. */
export interface MailMessage {
  /** One address, nothing else: no name, no list. */
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  readonly html?: string;
}

/** Sends mail. `send` resolves once the server has accepted the message for the recipient, and
 * rejects with a MailError otherwise. */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

/** Why a mail was not sent: `invalid_recipient` (not one plain address; nothing was sent),
 * `recipient_refused` (the server refused the recipient), `auth_failed` (the server refused
 * SMTP_URL's credentials), `tls_failed` (no STARTTLS offered, or the certificate or handshake
 * failed), `unreachable` (no connection, a timeout, the connection dropped), `refused` (the server
 * refused the message otherwise). */
export type MailFailure =
  'invalid_recipient' | 'recipient_refused' | 'auth_failed' | 'tls_failed' | 'unreachable' | 'refused';

/** A mail not sent. The message says why in words an operator can act on; it never holds the SMTP
 * password nor the recipient's address. `transient`: the same mail may go through later (a
 * connection problem or a 4xx reply). */
export class MailError extends Error {
  constructor(
    readonly reason: MailFailure,
    message: string,
    readonly transient: boolean,
    /** The server's SMTP reply code, when it answered with one. */
    readonly responseCode?: number,
  ) {
    super(message);
    this.name = 'MailError';
  }
}
