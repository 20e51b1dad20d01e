import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import type { AppConfig } from '#libs/config';
import { AccountsError, type AccountsService } from './accounts.service.js';
import type { PasswordHasher } from './password-hasher.js';

export type ConsoleRole = 'owner' | 'member';
export const CONSOLE_ROLES: readonly ConsoleRole[] = ['owner', 'member'];

/** How long links, sessions and the sign-in throttle last (docs/console.md). */
export const CONSOLE_LIMITS = {
  inviteTtlMs: 7 * 24 * 60 * 60 * 1000,
  resetTtlMs: 60 * 60 * 1000,
  /** A session ends this long after sign-in, whatever happens. */
  sessionTtlMs: 12 * 60 * 60 * 1000,
  /** ... and this long after its last request. */
  sessionIdleMs: 2 * 60 * 60 * 1000,
  /** Failed sign-ins counted over this window: */
  throttleWindowMs: 15 * 60 * 1000,
  /** at most this many for one email address, */
  failuresPerEmail: 5,
  /** and this many from one client address. */
  failuresPerAddress: 20,
  minPasswordLength: 12,
  maxPasswordLength: 256,
} as const;

/** A signed-in session as the console's pages use it. */
export interface ConsoleSession {
  readonly id: string;
  readonly userId: string;
  readonly email: string;
  readonly csrfToken: string;
}

export interface ConsoleMembership {
  readonly projectId: string;
  readonly projectName: string;
  readonly role: ConsoleRole;
}

export interface ConsoleMember {
  readonly userId: string;
  readonly email: string;
  readonly role: ConsoleRole;
  /** Whether the user has redeemed an invitation (set a password). */
  readonly active: boolean;
  readonly since: Date;
}

export interface ConsoleSessionView {
  readonly id: string;
  readonly userAgent: string | null;
  readonly createdAt: Date;
  readonly lastSeenAt: Date;
}

export type SignInResult =
  | { readonly ok: true; readonly token: string; readonly session: ConsoleSession }
  | { readonly ok: false; readonly reason: 'wrong' }
  | { readonly ok: false; readonly reason: 'throttled'; readonly retryAfterSeconds: number };

const sha256 = (token: string): Buffer => createHash('sha256').update(token).digest();
const newToken = (): string => randomBytes(32).toString('base64url');
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const EMAIL = /^[^\s@<>"]{1,64}@[^\s@<>"]{1,255}$/;

/** An email address as stored: trimmed, lower case; or an AccountsError. */
export function normaliseEmail(email: string): string {
  const e = email.trim().toLowerCase();
  if (!EMAIL.test(e)) throw new AccountsError(`"${email}" is not an email address`);
  return e;
}

/**
 * The customer console's accounts: users (email and an argon2id password), their memberships of
 * projects, one-time invitation and password-reset links, server-side sessions and the sign-in
 * throttle. The operator CLI (`console invite`, `console reset-password`) and the console's pages
 * use this one service.
 */
export class ConsoleAccountsService {
  private dummyHash: Promise<string> | undefined;

  constructor(
    private readonly db: DataSource,
    private readonly config: Pick<AppConfig, 'console'>,
    private readonly accounts: AccountsService,
    private readonly hasher: PasswordHasher,
  ) {}

  /**
   * Makes `email` a member of the project with `role` (an owner or member already there gets the
   * new role). A user who has not set a password yet gets a one-time invitation link; one who has
   * signs in as before (link null).
   */
  async invite(
    projectRef: string,
    email: string,
    role: ConsoleRole = 'member',
  ): Promise<{ email: string; projectId: string; projectName: string; link: string | null }> {
    if (!CONSOLE_ROLES.includes(role))
      throw new AccountsError(`unknown role "${String(role)}" (roles: ${CONSOLE_ROLES.join(', ')})`);
    const address = normaliseEmail(email);
    const project = await this.accounts.findProject(projectRef);
    return this.db.transaction(async (tx) => {
      const user = await this.userFor(tx, address);
      await tx.query(
        `insert into console_members (project_id, user_id, role) values ($1, $2, $3)
         on conflict (project_id, user_id) do update set role = excluded.role`,
        [project.id, user.id, role],
      );
      const link = user.hasPassword ? null : await this.newLink(tx, 'invite', user.id);
      return { email: address, projectId: project.id, projectName: project.name, link };
    });
  }

  /** A one-time link that sets a new password; the user's sessions end when it is used. */
  async passwordResetLink(email: string): Promise<string> {
    const address = normaliseEmail(email);
    const [user] = (await this.db.query(`select id from console_users where email = $1`, [address])) as {
      id: string;
    }[];
    if (!user) throw new AccountsError(`no console user "${address}"`);
    return this.db.transaction((tx) => this.newLink(tx, 'reset', user.id));
  }

  /** The email a still-valid link of `kind` is for, or null. */
  async linkEmail(kind: 'invite' | 'reset', token: string): Promise<string | null> {
    if (!TOKEN.test(token)) return null;
    const [row] = (await this.db.query(
      `select u.email from console_links l join console_users u on u.id = l.user_id
        where l.token_hash = $1 and l.kind = $2 and l.used_at is null and l.expires_at > now()`,
      [sha256(token), kind],
    )) as { email: string }[];
    return row?.email ?? null;
  }

  /** Uses a link: sets the password, ends every session of the user, and answers the email (null: no such valid link). */
  async redeemLink(kind: 'invite' | 'reset', token: string, password: string): Promise<string | null> {
    this.assertPassword(password);
    if (!TOKEN.test(token)) return null;
    const hash = await this.hasher.hash(password);
    return this.db.transaction(async (tx) => {
      const [row] = (await tx.query(
        `update console_links set used_at = now() where token_hash = $1 and kind = $2 and used_at is null and expires_at > now() returning user_id`,
        [sha256(token), kind],
      )) as [{ user_id: string }[], number];
      const userId = row[0]?.user_id;
      if (!userId) return null;
      const [users] = (await tx.query(`update console_users set password_hash = $2 where id = $1 returning email`, [
        userId,
        hash,
      ])) as [{ email: string }[], number];
      await tx.query(`update console_sessions set revoked_at = now() where user_id = $1 and revoked_at is null`, [
        userId,
      ]);
      return users[0]!.email;
    });
  }

  /**
   * Checks a password, throttled per email and per client address: past the limit the password is
   * not even checked. A failure is recorded for both; success forgets the email's failures.
   */
  async signIn(
    email: string,
    password: string,
    clientAddress: string,
    userAgent: string | null,
  ): Promise<SignInResult> {
    const address = email.trim().toLowerCase();
    const retryAfterSeconds = await this.throttled(address, clientAddress);
    if (retryAfterSeconds > 0) return { ok: false, reason: 'throttled', retryAfterSeconds };
    const [user] = (await this.db.query(`select id, email, password_hash from console_users where email = $1`, [
      address,
    ])) as { id: string; email: string; password_hash: string | null }[];
    // An unknown address costs what a known one does.
    const ok = user?.password_hash
      ? await this.hasher.verify(user.password_hash, password)
      : (await this.hasher.verify(await this.dummy(), password), false);
    if (!ok || !user) {
      await this.db.query(`insert into console_signin_failures (scope) values ($1), ($2)`, [
        `email:${address}`,
        `address:${clientAddress}`,
      ]);
      await this.db.query(`delete from console_signin_failures where at < now() - interval '1 day'`);
      return { ok: false, reason: 'wrong' };
    }
    await this.db.query(`delete from console_signin_failures where scope = $1`, [`email:${address}`]);
    const token = newToken();
    const session: ConsoleSession = { id: randomUUID(), userId: user.id, email: user.email, csrfToken: newToken() };
    await this.db.query(
      `insert into console_sessions (id, token_hash, user_id, csrf_token, user_agent, expires_at) values ($1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond')`,
      [
        session.id,
        sha256(token),
        user.id,
        session.csrfToken,
        userAgent?.slice(0, 300) ?? null,
        CONSOLE_LIMITS.sessionTtlMs,
      ],
    );
    return { ok: true, token, session };
  }

  /** The live session of a cookie's token, or null (unknown, revoked, expired or idle too long). */
  async session(token: string): Promise<ConsoleSession | null> {
    if (!TOKEN.test(token)) return null;
    const rows = (await this.db.query(
      `update console_sessions s set last_seen_at = now()
         from console_users u
        where s.token_hash = $1 and u.id = s.user_id and s.revoked_at is null and s.expires_at > now()
          and s.last_seen_at > now() - $2 * interval '1 millisecond'
        returning s.id, s.user_id, u.email, s.csrf_token, s.token_hash`,
      [sha256(token), CONSOLE_LIMITS.sessionIdleMs],
    )) as [{ id: string; user_id: string; email: string; csrf_token: string; token_hash: Buffer }[], number];
    const row = rows[0][0];
    if (!row || !timingSafeEqual(row.token_hash, sha256(token))) return null;
    return { id: row.id, userId: row.user_id, email: row.email, csrfToken: row.csrf_token };
  }

  async signOut(sessionId: string): Promise<void> {
    await this.db.query(`update console_sessions set revoked_at = now() where id = $1 and revoked_at is null`, [
      sessionId,
    ]);
  }

  /** Ends every session of the user, on every console replica at their next request. */
  async signOutEverywhere(userId: string): Promise<number> {
    const [, count] = (await this.db.query(
      `update console_sessions set revoked_at = now() where user_id = $1 and revoked_at is null`,
      [userId],
    )) as [unknown, number];
    return count;
  }

  async liveSessions(userId: string): Promise<ConsoleSessionView[]> {
    const rows = (await this.db.query(
      `select id, user_agent, created_at, last_seen_at from console_sessions
        where user_id = $1 and revoked_at is null and expires_at > now() and last_seen_at > now() - $2 * interval '1 millisecond'
        order by last_seen_at desc`,
      [userId, CONSOLE_LIMITS.sessionIdleMs],
    )) as { id: string; user_agent: string | null; created_at: Date; last_seen_at: Date }[];
    return rows.map((r) => ({
      id: r.id,
      userAgent: r.user_agent,
      createdAt: r.created_at,
      lastSeenAt: r.last_seen_at,
    }));
  }

  /** The projects a user is a member of. */
  async memberships(userId: string): Promise<ConsoleMembership[]> {
    const rows = (await this.db.query(
      `select m.project_id, p.name, m.role from console_members m join projects p on p.id = m.project_id where m.user_id = $1 order by p.name`,
      [userId],
    )) as { project_id: string; name: string; role: ConsoleRole }[];
    return rows.map((r) => ({ projectId: r.project_id, projectName: r.name, role: r.role }));
  }

  /** The user's membership of one project, or null: the one check in front of every project page. */
  async membership(userId: string, projectId: string): Promise<ConsoleMembership | null> {
    return (await this.memberships(userId)).find((m) => m.projectId === projectId) ?? null;
  }

  async members(projectId: string): Promise<ConsoleMember[]> {
    const rows = (await this.db.query(
      `select u.id, u.email, m.role, u.password_hash is not null as active, m.created_at from console_members m join console_users u on u.id = m.user_id
        where m.project_id = $1 order by m.role desc, u.email`,
      [projectId],
    )) as { id: string; email: string; role: ConsoleRole; active: boolean; created_at: Date }[];
    return rows.map((r) => ({ userId: r.id, email: r.email, role: r.role, active: r.active, since: r.created_at }));
  }

  /** Removes a member; a project keeps at least one owner. */
  async removeMember(projectId: string, userId: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const rows = (await tx.query(`select user_id, role from console_members where project_id = $1 for update`, [
        projectId,
      ])) as { user_id: string; role: ConsoleRole }[];
      const member = rows.find((r) => r.user_id === userId);
      if (!member) throw new AccountsError('no such member');
      if (member.role === 'owner' && rows.filter((r) => r.role === 'owner').length === 1)
        throw new AccountsError('a project keeps at least one owner');
      await tx.query(`delete from console_members where project_id = $1 and user_id = $2`, [projectId, userId]);
    });
  }

  assertPassword(password: string): void {
    const { minPasswordLength: min, maxPasswordLength: max } = CONSOLE_LIMITS;
    if (password.length < min || password.length > max)
      throw new AccountsError(`a password has ${min} to ${max} characters`);
  }

  /** Seconds until another attempt is allowed, or 0. */
  private async throttled(email: string, clientAddress: string): Promise<number> {
    const rows = (await this.db.query(
      `select scope, count(*)::int as n, min(at) as oldest from console_signin_failures
        where scope = any($1) and at > now() - $2 * interval '1 millisecond' group by scope`,
      [[`email:${email}`, `address:${clientAddress}`], CONSOLE_LIMITS.throttleWindowMs],
    )) as { scope: string; n: number; oldest: Date }[];
    let wait = 0;
    for (const r of rows) {
      const limit = r.scope.startsWith('email:') ? CONSOLE_LIMITS.failuresPerEmail : CONSOLE_LIMITS.failuresPerAddress;
      // At least a second: the oldest failure may leave the window while this answer travels.
      if (r.n >= limit)
        wait = Math.max(wait, 1, Math.ceil((r.oldest.getTime() + CONSOLE_LIMITS.throttleWindowMs - Date.now()) / 1000));
    }
    return wait;
  }

  private async userFor(tx: EntityManager, email: string): Promise<{ id: string; hasPassword: boolean }> {
    await tx.query(`insert into console_users (id, email) values ($1, $2) on conflict (email) do nothing`, [
      randomUUID(),
      email,
    ]);
    const [row] = (await tx.query(
      `select id, password_hash is not null as has_password from console_users where email = $1`,
      [email],
    )) as { id: string; has_password: boolean }[];
    return { id: row!.id, hasPassword: row!.has_password };
  }

  private async newLink(tx: EntityManager, kind: 'invite' | 'reset', userId: string): Promise<string> {
    const token = newToken();
    const ttl = kind === 'invite' ? CONSOLE_LIMITS.inviteTtlMs : CONSOLE_LIMITS.resetTtlMs;
    await tx.query(
      `insert into console_links (token_hash, kind, user_id, expires_at) values ($1, $2, $3, now() + $4 * interval '1 millisecond')`,
      [sha256(token), kind, userId, ttl],
    );
    return `${this.config.console.publicUrl}/${kind}/${token}`;
  }

  private dummy(): Promise<string> {
    this.dummyHash ??= this.hasher.hash(newToken());
    return this.dummyHash;
  }
}
