import { randomInt, randomUUID } from 'node:crypto';
import { jest } from '@jest/globals';
import { operatorCli } from '../support/cli.js';
import { ConsoleClient, linkIn } from '../support/console-client.js';
import { startConsole, type RunningConsole } from '../support/console.js';
import { testConfig } from '../support/config.js';
import { Fixtures } from '../support/fixtures.js';
import { startSmtpServer } from '../support/smtp-server.js';

// The console's accounts as a hostile customer uses them (issue 44, docs/security.md): two
// projects with an owner each, over the real console and PostgreSQL. Each case names the
// defect it reproduces; each failed against the console before the fix.
jest.setTimeout(90_000);

const config = testConfig();
const password = (): string => `pw ${randomUUID()}`;
const email = (who: string): string => `${who}-${randomUUID()}@example.com`;
/** A client address of its own for each scripted browser (the console trusts one proxy hop here),
 * so that one case's failures do not slow another's sign-ins. */
const someAddress = (): string => `198.18.${randomInt(256)}.${randomInt(1, 255)}`;

describe('console accounts against a hostile tenant', () => {
  let fixtures: Fixtures;
  let consoleApp: RunningConsole;
  let projectA: string;
  let projectB: string;
  const ownerA = { email: email('owner-a'), password: password() };
  const ownerB = { email: email('owner-b'), password: password() };
  let asOwnerA: ConsoleClient;
  let asOwnerB: ConsoleClient;

  const cli = (...argv: string[]): Promise<string> => operatorCli(config, ...argv);

  /** An operator's invitation of a new owner, redeemed: the owner signed in. */
  async function owner(projectId: string, who: { email: string; password: string }): Promise<ConsoleClient> {
    const link = linkIn(await cli('console', 'invite', projectId, who.email, '--role', 'owner'))!;
    const client = browser();
    expect((await client.setPassword(link, who.password)).status).toBe(303);
    expect((await client.signIn(who.email, who.password)).status).toBe(303);
    return client;
  }

  /** A new browser at an address of its own (or the one given). */
  const browser = (address = someAddress()): ConsoleClient =>
    new ConsoleClient(consoleApp.url, { 'x-forwarded-for': address });

  const passwordHash = async (address: string): Promise<string | null> =>
    (
      (await fixtures.db.query(`select password_hash from console_users where email = $1`, [address])) as {
        password_hash: string | null;
      }[]
    )[0]?.password_hash ?? null;

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    consoleApp = await startConsole({ CONSOLE_TRUSTED_PROXY_HOPS: '1' });
    projectA = (await fixtures.project()).project.id;
    projectB = (await fixtures.project()).project.id;
    asOwnerA = await owner(projectA, ownerA);
    asOwnerB = await owner(projectB, ownerB);
  });

  afterAll(async () => {
    await consoleApp?.close();
    await fixtures?.close();
  });

  it('defect 1: an owner cannot take over an address another project invited, nor tell whether an address has an account', async () => {
    const victim = email('victim');
    const invitedByB = await asOwnerB.post(`/projects/${projectB}/members`, { email: victim, role: 'developer' });
    expect(invitedByB.status).toBe(200);
    const linkOfB = linkIn(invitedByB.text)!;
    expect(linkOfB).toBeTruthy();

    // Project A's owner invites the same address, one nobody has used, and one with a password.
    const answers = await Promise.all(
      [victim, email('nobody'), ownerB.email].map(async (address) => {
        const r = await asOwnerA.post(`/projects/${projectA}/members`, { email: address, role: 'developer' });
        expect(r.status).toBe(200);
        const notice = /<div class="notice" role="status">([\s\S]*?)<\/div>/.exec(r.text)?.[1] ?? '';
        return {
          link: linkIn(r.text),
          notice: notice.replaceAll(address, 'ADDRESS').replace(/https?:\S+?(?=<)/g, 'LINK'),
        };
      }),
    );
    // The same answer, whether the address had an account (with a password or not) or none.
    expect(answers[1]!.notice).toBe(answers[0]!.notice);
    expect(answers[2]!.notice).toBe(answers[0]!.notice);

    // A's link for the victim's existing account sets no password, and signs nobody in.
    const attacker = browser();
    const linkOfA = answers[0]!.link;
    if (linkOfA) {
      const opened = await attacker.get(new URL(linkOfA).pathname);
      expect(opened.text).not.toContain('New password');
      const stolen = password();
      expect((await attacker.setPassword(linkOfA, stolen)).status).toBe(404);
      expect(await passwordHash(victim)).toBeNull();
      expect((await attacker.signIn(victim, stolen)).status).toBe(401);
    }

    // The victim's own link from B still works, and puts them in B.
    const asVictim = browser();
    const theirs = password();
    expect((await asVictim.setPassword(linkOfB, theirs)).status).toBe(303);
    expect((await asVictim.signIn(victim, theirs)).status).toBe(303);
    expect((await asVictim.get(`/projects/${projectB}/overview`)).status).toBe(200);
    // A's invitation is pending: not a membership until the victim accepts it with its link.
    expect((await asVictim.get(`/projects/${projectA}/overview`)).status).toBe(404);
  });

  it("defect 4: a link is used once and for one purpose, and redeeming one revokes the account's other password links", async () => {
    const user = email('user');
    const first = password();
    const toA = linkIn(await cli('console', 'invite', projectA, user, '--role', 'viewer'))!;
    const toB = linkIn(await cli('console', 'invite', projectB, user, '--role', 'owner'))!;
    const reset = linkIn(await cli('console', 'reset-password', user))!;
    const asUser = browser();
    expect((await asUser.setPassword(toA, first)).status).toBe(303);

    // Used once.
    expect((await browser().setPassword(toA, password())).status).toBe(404);
    // The reset link made before is revoked.
    expect((await browser().setPassword(reset, password())).status).toBe(404);
    // B's invitation link no longer sets a password that was set: it only accepts, signed in.
    expect((await browser().setPassword(toB, password())).status).toBe(404);
    expect((await asUser.signIn(user, first)).status).toBe(303);

    // Another account cannot accept it.
    const tokenB = new URL(toB).pathname;
    expect((await asOwnerA.post(`${tokenB}/accept`)).status).toBe(404);
    expect((await asOwnerA.get(`/projects/${projectB}/overview`)).status).toBe(404);

    // The account it names accepts it.
    expect((await asUser.get(tokenB)).text).toContain('Accept the invitation');
    const accepted = await asUser.post(`${tokenB}/accept`);
    expect(accepted.status).toBe(303);
    expect(accepted.location).toBe(`/projects/${projectB}/overview`);
    expect((await asUser.get(`/projects/${projectB}/overview`)).status).toBe(200);
    expect((await asUser.post(`${tokenB}/accept`)).status).toBe(404);
  });

  it('defect 3: concurrent wrong passwords are each counted before the check and slowed past the limit; the owner still signs in', async () => {
    const user = email('target');
    const theirs = password();
    const link = linkIn(await cli('console', 'invite', projectA, user))!;
    expect((await browser().setPassword(link, theirs)).status).toBe(303);

    const from = someAddress();
    const guesses = await Promise.all(Array.from({ length: 12 }, () => browser(from).signIn(user, password())));
    expect(guesses.map((g) => g.status)).toEqual(Array(12).fill(401));
    // 5 are within the limit; each of the 7 past it waited (0.5 s, doubling, at most 10 s) before its check.
    expect(guesses.filter((g) => g.ms >= 450).length).toBeGreaterThanOrEqual(7);

    // Not a lock: the right password still signs in, and clears the count.
    const asUser = browser();
    expect((await asUser.signIn(user, theirs)).status).toBe(303);
    const counted = (await fixtures.db.query(`select 1 from console_signin_counters where scope = $1`, [
      `email:${user}`,
    ])) as unknown[];
    expect(counted).toHaveLength(0);
  });

  it('defect 3: a password reset clears the throttle of the address it resets', async () => {
    const user = email('reset');
    const link = linkIn(await cli('console', 'invite', projectA, user))!;
    expect((await browser().setPassword(link, password())).status).toBe(303);
    for (let i = 0; i < 6; i++) await browser().signIn(user, password());
    const reset = linkIn(await cli('console', 'reset-password', user))!;
    const fresh = password();
    expect((await browser().setPassword(reset, fresh)).status).toBe(303);
    const counted = (await fixtures.db.query(`select attempts from console_signin_counters where scope = $1`, [
      `email:${user}`,
    ])) as unknown[];
    expect(counted).toHaveLength(0);
    expect((await browser().signIn(user, fresh)).status).toBe(303);
  });

  it("defect 3: behind a trusted proxy the throttle counts the client's address, not the proxy's", async () => {
    const attacker = someAddress();
    const user = { email: email('proxied'), password: password() };
    const link = linkIn(await cli('console', 'invite', projectA, user.email))!;
    expect((await browser().setPassword(link, user.password)).status).toBe(303);
    for (let i = 0; i < 21; i++) expect((await browser(attacker).signIn(email('guess'), password())).status).toBe(401);
    const owner = someAddress();
    expect((await browser(owner).signIn(user.email, user.password)).status).toBe(303);
    const counts = new Map(
      (
        (await fixtures.db.query(`select scope, attempts from console_signin_counters where scope = any($1)`, [
          [`address:${attacker}`, `address:${owner}`],
        ])) as { scope: string; attempts: number }[]
      ).map((r) => [r.scope, r.attempts]),
    );
    // The attacker's failures are theirs; the owner's success leaves their address uncounted.
    expect(counts.get(`address:${attacker}`)).toBe(21);
    expect(counts.get(`address:${owner}`) ?? 0).toBe(0);
  });

  it('with SMTP, links go by mail to the address only: the inviter sees none, the invitee gets theirs', async () => {
    const smtp = await startSmtpServer();
    const mailing = await startConsole({ ...smtp.env, CONSOLE_TRUSTED_PROXY_HOPS: '1' });
    try {
      const asOwner = new ConsoleClient(mailing.url, { 'x-forwarded-for': someAddress() });
      expect((await asOwner.signIn(ownerA.email, ownerA.password)).status).toBe(303);
      const invitee = email('mailed');
      const answer = await asOwner.post(`/projects/${projectA}/members`, { email: invitee, role: 'viewer' });
      expect(answer.status).toBe(200);
      expect(linkIn(answer.text)).toBeNull();
      expect(answer.text).toContain('The link went to them by mail.');
      const mail = await smtp.mailTo(invitee);
      const link = linkIn(mail.text)!;
      expect(link).toBeTruthy();
      const asInvitee = new ConsoleClient(mailing.url, { 'x-forwarded-for': someAddress() });
      const theirs = password();
      expect((await asInvitee.setPassword(link, theirs)).status).toBe(303);
      expect((await asInvitee.signIn(invitee, theirs)).status).toBe(303);
      expect((await asInvitee.get(`/projects/${projectA}/overview`)).status).toBe(200);
    } finally {
      await mailing.close();
      await smtp.close();
    }
  });

  it('defect 7: a malformed cookie is no 500 on any page', async () => {
    for (const path of ['/sign-in', '/', `/projects/${projectA}/overview`, '/account']) {
      const res = await fetch(`${consoleApp.url}${path}`, {
        headers: { cookie: 'mas_console=%E0%A4%A; mas_console_form=%; other=%zz' },
        redirect: 'manual',
      });
      expect(res.status).toBeLessThan(500);
    }
  });
});
