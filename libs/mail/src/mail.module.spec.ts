import { Global, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { MAILER, MailModule } from './mail.module.js';
import { SmtpMailer } from './smtp-mailer.js';

/** MAILER as an app gets it, with APP_CONFIG (global, as ConfigModule's is) holding these settings. */
async function mailerOf(smtp: AppConfig['smtp']): Promise<unknown> {
  @Global()
  @Module({ providers: [{ provide: APP_CONFIG, useValue: { smtp } }], exports: [APP_CONFIG] })
  class FakeConfigModule {}
  @Module({ imports: [FakeConfigModule, MailModule] })
  class AppModule {}
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  try {
    return app.get(MAILER);
  } finally {
    await app.close();
  }
}

describe('MailModule', () => {
  it('provides null as MAILER where SMTP is not configured', async () => {
    expect(await mailerOf(undefined)).toBeNull();
  });

  it('provides an SmtpMailer where it is (nothing connects until a send)', async () => {
    const smtp = {
      host: 'smtp.example.com',
      port: 587,
      implicitTls: false,
      requireStartTls: true,
      auth: { user: 'u', password: 'p4ssword' },
      from: { name: undefined, address: 'console@example.com' },
    };
    expect(await mailerOf(smtp)).toBeInstanceOf(SmtpMailer);
  });
});
