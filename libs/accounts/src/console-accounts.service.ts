import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import type { AppConfig } from '#libs/config';
import { AccountsError, type AccountsService } from './accounts.service.js';
import type { PasswordHasher } from './password-hasher.js';

/**
 * A membership's role (DESIGN.md section 11, "console roles"): an `owner` does everything, a
 * `developer` everything but members, model settings, spend limits and the audit log (and revokes
 * only the keys they issued), a `viewer` reads.
 */
export type ConsoleRole = 'owner' | 'developer' | 'viewer';
export const CONSOLE_ROLES: readonly ConsoleRole[] = ['owner', 'developer', 'viewer'];
const RANK: Record<ConsoleRole, number> = { viewer: 0, developer: 1, owner: 2 };
/** Whether `role` may do what `needed` may. */
export const roleAllows = (role: ConsoleRole, needed: ConsoleRole): boolean => RANK[role] >= RANK[needed];
/** A stored role: the previous release's `member` is a developer. */
const storedRole = (role: string): ConsoleRole => (role === 'member' ? 'developer' : (role as ConsoleRole));

/** How long links, sessions and the sign-in throttle last (docs/console.md). */
export const CONSOLE_LIMITS = {
  inviteTtlMs: 7 * 24 * 60 * 60 * 1000,
  resetTtlMs: 60 * 60 * 1000,
  /** A session ends this long after sign-in, whatever happens. */
  sessionTtlMs: 12 * 60 * 60 * 1000,
  /** ... and this long after its last request. */
  sessionIdleMs: 2 * 60 * 60 * 1000,
  /** Sign-in attempts counted over this window: */
  throttleWindowMs: 15 * 60 * 1000,
  /** past this many for one email address, */
  attemptsPerEmail: 5,
  /** or this many from one client address, each answer waits (the first 0.5 s, doubling), */
  attemptsPerAddress: 20,
  /** at most this long: nobody can lock another user out. */
  maxSignInDelayMs: 10_000,
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
  | { readonly ok: false; readonly reason: 'wrong' };

/** What a one-time link is for, as its page shows it (null: unknown, used or expired). */
export type LinkView =
  /** A new account's first password, which also accepts its invitation. */
  | {
      readonly purpose: 'set-password';
      readonly kind: 'invite' | 'reset';
      readonly email: string;
      readonly projectName: string | null;
    }
  /** An invitation the account it names accepts after signing in with its own password. */
  | {
      readonly purpose: 'accept';
      readonly email: string;
      readonly userId: string;
      readonly projectName: string;
      readonly role: ConsoleRole;
    };

/** What the inviter is told: the same whether the address had an account or not. */
export interface InvitationResult {
  readonly email: string;
  readonly projectId: string;
  readonly projectName: string;
  readonly role: ConsoleRole;
  /** The one-time link, when no mail was sent: the inviter passes it on. */
  readonly link: string | null;
  /** Whether the link went by mail to the address. */
  readonly mailed: boolean;
  /** The address was a member already: their role is changed, and no link is made. */
  readonly roleChanged: boolean;
}

/** A message for the address an invitation or reset is for (libs/mail sends it). */
export interface LinkMail {
  readonly to: string;
  readonly purpose: 'invite' | 'accept' | 'reset';
  readonly link: string;
  readonly projectName: string | null;
  readonly role: ConsoleRole | null;
}

/** Sends links by mail; null where no SMTP is configured. */
export type LinkMailer = ((mail: LinkMail) => Promise<void>) | null;

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
 * projects with a role, invitations (pending memberships), one-time links, server-side sessions
 * and the sign-in throttle. The operator CLI (`console invite`, `console reset-password`) and the
 * console's pages use this one service. Its rules against a hostile tenant are docs/security.md's.
 */
export class ConsoleAccountsService {
  private dummyHash: Promise<string> | undefined;
  private countersPurgedAt = 0;

  constructor(
    private readonly db: DataSource,
    private readonly config: Pick<AppConfig, 'console'>,
    private readonly accounts: AccountsService,
    private readonly hasher: PasswordHasher,
    private readonly mailer: LinkMailer = null,
    /** Waits before a throttled sign-in's check (the tests' clock may replace it). */
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {}

  /**
   * Invites `email` to the project with `role`. A member already there gets the new role. Anyone
   * else gets a pending invitation and a one-time link bound to it: for an address with no account
   * yet, the link sets the new account's first password and accepts; for an existing account
   * (with or without a password), it only accepts, after the account signs in with its own
   * password. The link goes by mail where SMTP is configured, else to the inviter; either way the
   * inviter's answer is the same whether the address had an account or not.
   */
  async invite(
    projectRef: string,
    email: string,
    role: ConsoleRole = 'developer',
    invitedBy: string | null = null,
  ): Promise<InvitationResult> {
    if (!CONSOLE_ROLES.includes(role))
      throw new AccountsError(`unknown role "${String(role)}" (roles: ${CONSOLE_ROLES.join(', ')})`);
    const address = normaliseEmail(email);
    const project = await this.accounts.findProject(projectRef);
    const { link, purpose } = await this.db.transaction(async (tx) => {
      const user = await this.userFor(tx, address);
      const [, updated] = (await tx.query(
        `update console_members set role = $3 where project_id = $1 and user_id = $2`,
        [project.id, user.id, role],
      )) as [unknown, number];
      // An invitation of a member is a change of role, and needs no link.
      if (updated > 0) return { link: null, purpose: null };
      await tx.query(
        `update console_invitations set revoked_at = now() where project_id = $1 and user_id = $2 and accepted_at is null and revoked_at is null`,
        [project.id, user.id],
      );
      const invitationId = randomUUID();
      await tx.query(
        `insert into console_invitations (id, project_id, user_id, role, invited_by, expires_at)
         values ($1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond')`,
        [invitationId, project.id, user.id, role, invitedBy, CONSOLE_LIMITS.inviteTtlMs],
      );
      const purpose = user.created ? ('invite' as const) : ('accept' as const);
      return { link: await this.newLink(tx, purpose, user.id, invitationId), purpose };
    });
    const base = { email: address, projectId: project.id, projectName: project.name, role };
    if (!link || !purpose) return { ...base, link: null, mailed: false, roleChanged: true };
    const mailed = await this.mail({ to: address, purpose, link, projectName: project.name, role });
    return { ...base, link: mailed ? null : link, mailed, roleChanged: false };
  }

  /** A one-time link that sets a new password (mailed where SMTP is configured); the user's sessions end when it is used. */
  async passwordResetLink(email: string): Promise<{ link: string | null; mailed: boolean }> {
    const address = normaliseEmail(email);
    const [user] = (await this.db.query(`select id from console_users where email = $1`, [address])) as {
      id: string;
    }[];
    if (!user) throw new AccountsError(`no console user "${address}"`);
    const link = await this.db.transaction((tx) => this.newLink(tx, 'reset', user.id, null));
    const mailed = await this.mail({ to: address, purpose: 'reset', link, projectName: null, role: null });
    return { link: mailed ? null : link, mailed };
  }

  /**
   * What a still-valid link is for, or null. An invitation link of an account that has a password
   * by now only accepts: no link sets a password that was already set, except a reset.
   */
  async link(token: string): Promise<LinkView | null> {
    if (!TOKEN.test(token)) return null;
    const [row] = (await this.db.query(
      `select l.kind, l.invitation_id, u.id as user_id, u.email, u.password_hash is not null as has_password, p.name as project_name, i.role
         from console_links l join console_users u on u.id = l.user_id
         left join console_invitations i on i.id = l.invitation_id and i.accepted_at is null and i.revoked_at is null and i.expires_at > now()
         left join projects p on p.id = i.project_id
        where l.token_hash = $1 and l.used_at is null and l.expires_at > now()`,
      [sha256(token)],
    )) as {
      kind: 'invite' | 'accept' | 'reset';
      invitation_id: string | null;
      user_id: string;
      email: string;
      has_password: boolean;
      project_name: string | null;
      role: ConsoleRole | null;
    }[];
    if (!row) return null;
    if (row.kind === 'reset') return { purpose: 'set-password', kind: 'reset', email: row.email, projectName: null };
    // The previous release's invitation links name no invitation (its membership exists already).
    if (row.kind === 'invite' && !row.invitation_id && !row.has_password)
      return { purpose: 'set-password', kind: 'invite', email: row.email, projectName: null };
    // An invitation link whose invitation is gone (revoked, expired, or the project deleted) is no link.
    if (!row.project_name || !row.role) return null;
    if (row.kind === 'invite' && !row.has_password)
      return { purpose: 'set-password', kind: 'invite', email: row.email, projectName: row.project_name };
    return { purpose: 'accept', email: row.email, userId: row.user_id, projectName: row.project_name, role: row.role };
  }

  /**
   * Uses a link that sets a password: an invitation's (only while the account has none; it also
   * accepts the invitation) or a reset's. Every other password link of the account is revoked
   * (its other invitations' links then only accept), every session ends, the sign-in throttle of
   * the address is cleared. Answers the email, or null for no such valid link.
   */
  async setPassword(token: string, password: string): Promise<string | null> {
    this.assertPassword(password);
    // The link is looked up before the password is hashed: an unknown token costs no argon2id.
    const view = await this.link(token);
    if (view?.purpose !== 'set-password') return null;
    const hash = await this.hasher.hash(password);
    return this.db.transaction(async (tx) => {
      const [links] = (await tx.query(
        `update console_links set used_at = now() where token_hash = $1 and kind = $2 and used_at is null and expires_at > now()
         returning user_id, invitation_id`,
        [sha256(token), view.kind],
      )) as [{ user_id: string; invitation_id: string | null }[], number];
      const link = links[0];
      if (!link) return null;
      const [users] = (await tx.query(
        `update console_users set password_hash = $2 where id = $1 ${view.kind === 'invite' ? 'and password_hash is null' : ''} returning email`,
        [link.user_id, hash],
      )) as [{ email: string }[], number];
      const email = users[0]?.email;
      // An invitation link of an account that set its password meanwhile: refused, and used up.
      if (!email) return null;
      if (link.invitation_id) await this.acceptIn(tx, link.invitation_id, link.user_id);
      await this.revokeOtherLinks(tx, link.user_id);
      await tx.query(`update console_sessions set revoked_at = now() where user_id = $1 and revoked_at is null`, [
        link.user_id,
      ]);
      await tx.query(`delete from console_signin_counters where scope = $1`, [`email:${email}`]);
      return email;
    });
  }

  /**
   * Accepts an invitation with its link, for the signed-in account the invitation names: the
   * membership starts. Null (nothing changes) for a link that is no valid invitation of this user.
   */
  async acceptInvitation(token: string, userId: string): Promise<{ projectId: string } | null> {
    if (!TOKEN.test(token)) return null;
    return this.db.transaction(async (tx) => {
      const [links] = (await tx.query(
        `update console_links set used_at = now()
          where token_hash = $1 and kind in ('invite', 'accept') and user_id = $2 and used_at is null and expires_at > now()
            and invitation_id is not null
          returning invitation_id`,
        [sha256(token), userId],
      )) as [{ invitation_id: string }[], number];
      const invitationId = links[0]?.invitation_id;
      if (!invitationId) return null;
      return this.acceptIn(tx, invitationId, userId);
    });
  }

  /**
   * Checks a password, throttled per email and per client address: the attempt is counted
   * first, atomically (concurrent attempts each take their own number), and past the limit the
   * answer waits, 0.5 s doubling, at most 10 s, before the password is checked: slower guesses,
   * and no lock that an attacker could put on someone else's account. Success clears the email's
   * count.
   */
  async signIn(
    email: string,
    password: string,
    clientAddress: string,
    userAgent: string | null,
  ): Promise<SignInResult> {
    const address = email.trim().toLowerCase();
    await this.sleep(await this.throttleDelayMs(address, clientAddress));
    const [user] = (await this.db.query(`select id, email, password_hash from console_users where email = $1`, [
      address,
    ])) as { id: string; email: string; password_hash: string | null }[];
    // An unknown address costs what a known one does.
    const ok = user?.password_hash
      ? await this.hasher.verify(user.password_hash, password)
      : (await this.hasher.verify(await this.dummy(), password), false);
    if (!ok || !user) return { ok: false, reason: 'wrong' };
    // Success forgets the email's count, and this attempt in the address's count: an address's
    // count is of its failures, and of the attempts still being checked.
    await this.db.query(
      `with forgotten as (delete from console_signin_counters where scope = $1)
       update console_signin_counters set attempts = attempts - 1 where scope = $2 and attempts > 0`,
      [`email:${address}`, `address:${clientAddress}`],
    );
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

  /**
   * A signed-in user changes their password: the new one is checked first (no hash for a refused
   * one), then the current one through sign-in's throttle (counted per email and client address,
   * waiting past the limit), then the new one is set, the user's other sessions end (`keepSessionId`
   * stays), their reset links die and their other invitations' links only accept. False: the
   * current password is wrong and nothing changed.
   */
  async changePassword(
    session: Pick<ConsoleSession, 'id' | 'userId' | 'email'>,
    current: string,
    password: string,
    clientAddress: string,
  ): Promise<boolean> {
    this.assertPassword(password);
    const address = session.email.trim().toLowerCase();
    await this.sleep(await this.throttleDelayMs(address, clientAddress));
    const [user] = (await this.db.query(`select password_hash from console_users where id = $1`, [session.userId])) as {
      password_hash: string | null;
    }[];
    if (!user?.password_hash || !(await this.hasher.verify(user.password_hash, current))) return false;
    const hash = await this.hasher.hash(password);
    await this.db.transaction(async (tx) => {
      await tx.query(`update console_users set password_hash = $2 where id = $1`, [session.userId, hash]);
      await this.revokeOtherLinks(tx, session.userId);
      await tx.query(
        `update console_sessions set revoked_at = now() where user_id = $1 and id <> $2 and revoked_at is null`,
        [session.userId, session.id],
      );
      await tx.query(
        `with forgotten as (delete from console_signin_counters where scope = $1)
         update console_signin_counters set attempts = attempts - 1 where scope = $2 and attempts > 0`,
        [`email:${address}`, `address:${clientAddress}`],
      );
    });
    return true;
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
    )) as { project_id: string; name: string; role: string }[];
    return rows.map((r) => ({ projectId: r.project_id, projectName: r.name, role: storedRole(r.role) }));
  }

  /** The user's membership of one project, or null: the one check in front of every project page. */
  async membership(userId: string, projectId: string): Promise<ConsoleMembership | null> {
    const [row] = (await this.db.query(
      `select m.project_id, p.name, m.role from console_members m join projects p on p.id = m.project_id where m.user_id = $1 and m.project_id = $2`,
      [userId, projectId],
    )) as { project_id: string; name: string; role: string }[];
    return row ? { projectId: row.project_id, projectName: row.name, role: storedRole(row.role) } : null;
  }

  async members(projectId: string): Promise<ConsoleMember[]> {
    const rows = (await this.db.query(
      `select u.id, u.email, m.role, true as active, m.created_at from console_members m join console_users u on u.id = m.user_id
        where m.project_id = $1
       union all
       select u.id, u.email, i.role, false as active, i.created_at from console_invitations i join console_users u on u.id = i.user_id
        where i.project_id = $1 and i.accepted_at is null and i.revoked_at is null and i.expires_at > now()
          and not exists (select 1 from console_members m where m.project_id = i.project_id and m.user_id = i.user_id)
        order by active desc, email`,
      [projectId],
    )) as { id: string; email: string; role: string; active: boolean; created_at: Date }[];
    return rows.map((r) => ({
      userId: r.id,
      email: r.email,
      role: storedRole(r.role),
      active: r.active,
      since: r.created_at,
    }));
  }

  /** Removes a member, or withdraws a pending invitation; a project keeps at least one owner. */
  async removeMember(projectId: string, userId: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const [, withdrawn] = (await tx.query(
        `update console_invitations set revoked_at = now() where project_id = $1 and user_id = $2 and accepted_at is null and revoked_at is null`,
        [projectId, userId],
      )) as [unknown, number];
      const rows = (await tx.query(`select user_id, role from console_members where project_id = $1 for update`, [
        projectId,
      ])) as { user_id: string; role: string }[];
      const member = rows.find((r) => r.user_id === userId);
      if (!member) {
        if (withdrawn > 0) return;
        throw new AccountsError('no such member');
      }
      if (member.role === 'owner' && rows.filter((r) => r.role === 'owner').length === 1)
        throw new AccountsError('a project keeps at least one owner');
      await tx.query(`delete from console_members where project_id = $1 and user_id = $2`, [projectId, userId]);
    });
  }

  /** Who issued a key in the console (a developer revokes only their own). */
  async recordKeyIssuer(keyId: string, userId: string): Promise<void> {
    await this.db.query(`insert into console_key_issuers (key_id, user_id) values ($1, $2) on conflict do nothing`, [
      keyId,
      userId,
    ]);
  }

  /** The console user who issued a key, or null (the CLI issued it). */
  async keyIssuer(keyId: string): Promise<string | null> {
    const [row] = (await this.db.query(`select user_id from console_key_issuers where key_id = $1`, [keyId])) as {
      user_id: string;
    }[];
    return row?.user_id ?? null;
  }

  assertPassword(password: string): void {
    const { minPasswordLength: min, maxPasswordLength: max } = CONSOLE_LIMITS;
    if (password.length < min || password.length > max)
      throw new AccountsError(`a password has ${min} to ${max} characters`);
  }

  /**
   * Counts this attempt for the email and the client address (each row locked in turn, in one
   * order, so concurrent attempts take distinct numbers) and answers how long it waits.
   */
  private async throttleDelayMs(email: string, clientAddress: string): Promise<number> {
    // A counter per email and address ever tried: those whose window ended a day ago go, at most
    // once a minute per process, so sprayed addresses do not grow the table without end.
    if (Date.now() - this.countersPurgedAt > 60_000) {
      this.countersPurgedAt = Date.now();
      await this.db.query(`delete from console_signin_counters where window_started_at < now() - interval '1 day'`);
    }
    const scopes = [`address:${clientAddress}`, `email:${email}`].sort();
    const rows = (await this.db.query(
      `insert into console_signin_counters as c (scope, window_started_at, attempts)
       select scope, now(), 1 from unnest($1::text[]) with ordinality as s(scope, n) order by n
       on conflict (scope) do update set
         window_started_at = case when c.window_started_at <= now() - $2 * interval '1 millisecond' then now() else c.window_started_at end,
         attempts = case when c.window_started_at <= now() - $2 * interval '1 millisecond' then 1 else c.attempts + 1 end
       returning scope, attempts`,
      [scopes, CONSOLE_LIMITS.throttleWindowMs],
    )) as { scope: string; attempts: number }[];
    let excess = 0;
    for (const r of rows) {
      const limit = r.scope.startsWith('email:') ? CONSOLE_LIMITS.attemptsPerEmail : CONSOLE_LIMITS.attemptsPerAddress;
      excess = Math.max(excess, r.attempts - limit);
    }
    return signInDelayMs(excess);
  }

  private async acceptIn(
    tx: EntityManager,
    invitationId: string,
    userId: string,
  ): Promise<{ projectId: string } | null> {
    const [rows] = (await tx.query(
      `update console_invitations set accepted_at = now()
        where id = $1 and user_id = $2 and accepted_at is null and revoked_at is null and expires_at > now()
        returning project_id, role`,
      [invitationId, userId],
    )) as [{ project_id: string; role: ConsoleRole }[], number];
    const invitation = rows[0];
    if (!invitation) return null;
    await tx.query(
      `insert into console_members (project_id, user_id, role) values ($1, $2, $3)
       on conflict (project_id, user_id) do update set role = excluded.role`,
      [invitation.project_id, userId, invitation.role],
    );
    return { projectId: invitation.project_id };
  }

  /** After a password is set: reset links die, other invitations' links only accept from now on. */
  private async revokeOtherLinks(tx: EntityManager, userId: string): Promise<void> {
    await tx.query(
      `update console_links set used_at = now() where user_id = $1 and kind = 'reset' and used_at is null`,
      [userId],
    );
    await tx.query(
      `update console_links set kind = 'accept' where user_id = $1 and kind = 'invite' and used_at is null`,
      [userId],
    );
  }

  private async userFor(tx: EntityManager, email: string): Promise<{ id: string; created: boolean }> {
    const inserted = (await tx.query(
      `insert into console_users (id, email) values ($1, $2) on conflict (email) do nothing returning id`,
      [randomUUID(), email],
    )) as { id: string }[];
    if (inserted[0]) return { id: inserted[0].id, created: true };
    const [row] = (await tx.query(`select id from console_users where email = $1`, [email])) as { id: string }[];
    return { id: row!.id, created: false };
  }

  private async newLink(
    tx: EntityManager,
    kind: 'invite' | 'accept' | 'reset',
    userId: string,
    invitationId: string | null,
  ): Promise<string> {
    const token = newToken();
    const ttl = kind === 'reset' ? CONSOLE_LIMITS.resetTtlMs : CONSOLE_LIMITS.inviteTtlMs;
    await tx.query(
      `insert into console_links (token_hash, kind, user_id, invitation_id, expires_at) values ($1, $2, $3, $4, now() + $5 * interval '1 millisecond')`,
      [sha256(token), kind, userId, invitationId, ttl],
    );
    return `${this.config.console.publicUrl}/${kind === 'reset' ? 'reset' : 'invite'}/${token}`;
  }

  /** Sends the link by mail where SMTP is configured; whether it did. */
  private async mail(mail: LinkMail): Promise<boolean> {
    if (!this.mailer) return false;
    await this.mailer(mail);
    return true;
  }

  private dummy(): Promise<string> {
    this.dummyHash ??= this.hasher.hash(newToken());
    return this.dummyHash;
  }
}

/** How long a sign-in waits past the limit: 0.5 s for the first attempt over it, doubling, at most 10 s. */
export function signInDelayMs(excess: number): number {
  if (excess <= 0) return 0;
  return Math.min(CONSOLE_LIMITS.maxSignInDelayMs, 500 * 2 ** Math.min(excess - 1, 16));
}
