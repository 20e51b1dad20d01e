import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { decryptSecret, encryptSecret, masterKeys } from '#libs/accounts';
import { APP_CONFIG, type AppConfig } from '#libs/config';

/** How long a secret waits for the page that shows it (the redirect follows at once). */
const REVEAL_TTL_MS = 10 * 60 * 1000;

/**
 * A secret shown once after a redirect (POST-redirect-GET): the POST that makes it keeps it here
 * for the console session that asked, sealed with the master key (bound to the session's id), and
 * the page it redirects to takes it, in one statement that deletes it. A reload finds nothing; no
 * other session, replica or URL sees it (docs/console.md, "API keys").
 */
@Injectable()
export class Reveals {
  constructor(
    private readonly db: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async keep(sessionId: string, kind: string, secret: string): Promise<void> {
    await this.db.query(
      `with gone as (delete from console_reveals where expires_at <= now())
       insert into console_reveals (session_id, kind, sealed, expires_at) values ($1, $2, $3, now() + $4 * interval '1 millisecond')
       on conflict (session_id, kind) do update set sealed = excluded.sealed, expires_at = excluded.expires_at`,
      [sessionId, kind, encryptSecret(secret, this.config.masterKey, `reveal:${sessionId}:${kind}`), REVEAL_TTL_MS],
    );
  }

  /** The secret kept for this session, once: it is deleted as it is read. */
  async take(sessionId: string, kind: string): Promise<string | null> {
    const [rows] = (await this.db.query(
      `delete from console_reveals where session_id = $1 and kind = $2 returning sealed, expires_at > now() as live`,
      [sessionId, kind],
    )) as [{ sealed: Buffer; live: boolean }[], number];
    const row = rows[0];
    return row?.live ? decryptSecret(row.sealed, masterKeys(this.config), `reveal:${sessionId}:${kind}`) : null;
  }
}
