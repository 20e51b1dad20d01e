import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import type { Mailer } from './mail-message.js';
import { mailerFromConfig } from './smtp-mailer.js';

/** Injection token of the `Mailer | null` of the configuration (null: no SMTP_URL). */
export const MAILER = Symbol('MAILER');

/** Provides MAILER: the SMTP mailer of SMTP_URL and MAIL_FROM, or null where SMTP is not configured. */
@Module({
  providers: [
    {
      provide: MAILER,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig): Mailer | null => mailerFromConfig(config),
    },
  ],
  exports: [MAILER],
})
export class MailModule {}
