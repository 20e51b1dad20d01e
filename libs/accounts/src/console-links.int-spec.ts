import { randomBytes, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { EventStore } from '#libs/events';
import { dataSourceOptions } from '#libs/persistence';
import { testConfig } from '../../../test/support/config.js';
import { AccountsService } from './accounts.service.js';
import { ConsoleAccountsService } from './console-accounts.service.js';
import type { PasswordHasher } from './password-hasher.js';

const config = testConfig();

/** A hasher that counts its work (and does none of argon2id's, so the count is all there is). */
class CountingHasher implements PasswordHasher {
  hashes = 0;
  async hash(password: string): Promise<string> {
    this.hashes++;
    return `plain:${password}`;
  }
  async verify(hash: string, password: string): Promise<boolean> {
    return hash === `plain:${password}`;
  }
}

// Issue 44, defect 7: POST /invite|reset/<any token> hashed the password (argon2id: 19 MiB and
// tens of ms of a core) before the token was looked up, for anyone, signed in or not.
describe('one-time links against PostgreSQL', () => {
  let db: DataSource;
  let hasher: CountingHasher;
  let consoleAccounts: ConsoleAccountsService;
  let projectId: string;

  beforeAll(async () => {
    db = new DataSource({ ...dataSourceOptions(config), logging: false });
    await db.initialize();
    const accounts = new AccountsService(db, config, new EventStore());
    hasher = new CountingHasher();
    consoleAccounts = new ConsoleAccountsService(db, config, accounts, hasher);
    projectId = (await accounts.createProject({ name: `links-${randomUUID()}`, plan: 'pro' })).id;
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('hashes no password for a link that does not exist, is used, or is for another purpose', async () => {
    const unknown = randomBytes(32).toString('base64url');
    expect(await consoleAccounts.setPassword(unknown, 'a long enough password')).toBeNull();
    const { link } = await consoleAccounts.invite(projectId, `links-${randomUUID()}@example.com`, 'viewer');
    const token = link!.split('/').pop()!;
    expect(await consoleAccounts.setPassword(token, 'a long enough password')).not.toBeNull();
    expect(hasher.hashes).toBe(1);
    // Used: no second hash.
    expect(await consoleAccounts.setPassword(token, 'another long password')).toBeNull();
    expect(hasher.hashes).toBe(1);
  });

  it('deletes sign-in counters whose window ended a day ago when it counts an attempt', async () => {
    const stale = `email:stale-${randomUUID()}@example.com`;
    await db.query(
      `insert into console_signin_counters (scope, window_started_at, attempts) values ($1, now() - interval '2 days', 9)`,
      [stale],
    );
    const fresh = new ConsoleAccountsService(db, config, new AccountsService(db, config, new EventStore()), hasher);
    await fresh.signIn(`nobody-${randomUUID()}@example.com`, 'a long enough password', '192.0.2.1', null);
    expect(await db.query(`select 1 from console_signin_counters where scope = $1`, [stale])).toHaveLength(0);
  });
});
