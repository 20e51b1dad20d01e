import { Controller, Get, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AccountsError, AuditLog, CONSOLE_LIMITS, ConsoleAccountsService, type LinkView } from '#libs/accounts';
import { cookie, csrfTokenOf, sessionOf, type CookieNames } from './web/console-request.js';
import { html, type Html } from './web/html.js';
import { csrfField, page, projectPath, when } from './web/layout.js';
import { field, localPath, requireSession, send } from './web/respond.js';

export const COOKIE_NAMES = Symbol('COOKIE_NAMES');

/** Signing in and out, invitations, password resets and the user's own sessions. */
@Controller()
export class AuthController {
  constructor(
    private readonly accounts: ConsoleAccountsService,
    private readonly auditLog: AuditLog,
    @Inject(COOKIE_NAMES) private readonly cookies: CookieNames,
  ) {}

  @Get()
  async home(@Req() req: Request, @Res() res: Response): Promise<void> {
    const session = requireSession(req);
    const memberships = await this.accounts.memberships(session.userId);
    if (memberships.length === 1) return res.redirect(303, projectPath(memberships[0]!.projectId));
    send(
      res,
      page(
        { title: 'Your projects', csrf: session.csrfToken, session },
        memberships.length
          ? html`<ul>${memberships.map((m) => html`<li><a href="${projectPath(m.projectId)}">${m.projectName}</a> <span class="muted">(${m.role})</span></li>`)}</ul>`
          : html`<p>You are not a member of any project yet. A project's owner or an operator can invite you.</p>`,
      ),
    );
  }

  @Get('sign-in')
  signInPage(@Req() req: Request, @Res() res: Response): void {
    if (sessionOf(req)) return res.redirect(303, '/');
    send(res, this.signInForm(req));
  }

  @Post('sign-in')
  async signIn(@Req() req: Request, @Res() res: Response): Promise<void> {
    const email = field(req, 'email');
    // The client's address as the configured proxies in front of the console saw it (trust proxy).
    const result = await this.accounts.signIn(
      email,
      field(req, 'password'),
      req.ip ?? 'unknown',
      req.headers['user-agent'] ?? null,
    );
    if (result.ok) {
      res.append(
        'Set-Cookie',
        cookie(this.cookies, this.cookies.session, result.token, CONSOLE_LIMITS.sessionTtlMs / 1000),
      );
      return res.redirect(303, localPath(field(req, 'next')));
    }
    send(res, this.signInForm(req, email, 'Wrong email or password.'), 401);
  }

  @Post('sign-out')
  async signOut(@Req() req: Request, @Res() res: Response): Promise<void> {
    const session = sessionOf(req);
    if (session) await this.accounts.signOut(session.id);
    res.append('Set-Cookie', cookie(this.cookies, this.cookies.session, '', 0));
    res.redirect(303, '/sign-in');
  }

  @Get('account')
  async account(@Req() req: Request, @Res() res: Response): Promise<void> {
    await this.accountPage(req, res);
  }

  /**
   * Changes the signed-in user's password: the current one is checked through the sign-in
   * throttle, the user's other sessions end and their reset links die (this session stays).
   */
  @Post('account/password')
  async changePassword(@Req() req: Request, @Res() res: Response): Promise<void> {
    const session = requireSession(req);
    const password = field(req, 'password');
    if (password !== field(req, 'confirm'))
      return this.accountPage(req, res, { problem: 'The two new passwords differ.' }, 400);
    try {
      const changed = await this.accounts.changePassword(session, field(req, 'current'), password, req.ip ?? 'unknown');
      if (!changed) return this.accountPage(req, res, { problem: 'The current password is wrong.' }, 400);
      // The user's own change, in the log of every project they are a member of (no secret in it).
      const by = { actor: `user:${session.email}`, address: req.ip ?? null };
      for (const m of await this.accounts.memberships(session.userId))
        await this.auditLog.record(m.projectId, by, 'account.password');
    } catch (e) {
      if (e instanceof AccountsError) return this.accountPage(req, res, { problem: e.message }, 400);
      throw e;
    }
    res.redirect(303, '/account?done=password');
  }

  @Post('account/sign-out-everywhere')
  async signOutEverywhere(@Req() req: Request, @Res() res: Response): Promise<void> {
    const session = requireSession(req);
    await this.accounts.signOutEverywhere(session.userId);
    res.append('Set-Cookie', cookie(this.cookies, this.cookies.session, '', 0));
    res.redirect(303, '/sign-in');
  }

  @Get('invite/:token')
  async invitePage(@Param('token') token: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const view = await this.accounts.link(token);
    if (view?.purpose === 'accept') return send(res, this.acceptPage(req, token, view));
    const ok = view?.purpose === 'set-password' && view.kind === 'invite';
    send(res, this.passwordForm(req, 'invite', token, ok ? view.email : null), ok ? 200 : 404);
  }

  @Get('reset/:token')
  async resetPage(@Param('token') token: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const view = await this.accounts.link(token);
    const ok = view?.purpose === 'set-password' && view.kind === 'reset';
    send(res, this.passwordForm(req, 'reset', token, ok ? view.email : null), ok ? 200 : 404);
  }

  @Post('invite/:token')
  acceptInvite(@Param('token') token: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.redeem('invite', token, req, res);
  }

  /** An existing account accepts an invitation, signed in as the account the invitation names. */
  @Post('invite/:token/accept')
  async acceptAsMember(@Param('token') token: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const session = requireSession(req);
    const accepted = await this.accounts.acceptInvitation(token, session.userId);
    if (!accepted) {
      const view = await this.accounts.link(token);
      return send(
        res,
        view?.purpose === 'accept' ? this.acceptPage(req, token, view) : this.passwordForm(req, 'invite', token, null),
        404,
      );
    }
    res.redirect(303, projectPath(accepted.projectId));
  }

  @Post('reset/:token')
  resetPassword(@Param('token') token: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.redeem('reset', token, req, res);
  }

  private async redeem(kind: 'invite' | 'reset', token: string, req: Request, res: Response): Promise<void> {
    const view = await this.accounts.link(token);
    const email = view?.purpose === 'set-password' && view.kind === kind ? view.email : null;
    // An unknown, used or other link costs no password hash.
    if (!email) return send(res, this.passwordForm(req, kind, token, null), 404);
    const password = field(req, 'password');
    if (password !== field(req, 'confirm'))
      return send(res, this.passwordForm(req, kind, token, email, 'The two passwords differ.'), 400);
    try {
      const redeemed = await this.accounts.setPassword(token, password);
      if (!redeemed) return send(res, this.passwordForm(req, kind, token, null), 404);
    } catch (e) {
      if (e instanceof AccountsError) return send(res, this.passwordForm(req, kind, token, email, e.message), 400);
      throw e;
    }
    res.redirect(303, '/sign-in?done=password');
  }

  private async accountPage(
    req: Request,
    res: Response,
    outcome: { problem?: string } = {},
    statusCode = 200,
  ): Promise<void> {
    const session = requireSession(req);
    const live = await this.accounts.liveSessions(session.userId);
    const done = req.query['done'] === 'password';
    send(
      res,
      page(
        { title: 'Your account', csrf: session.csrfToken, session },
        html`${done && !outcome.problem ? html`<p class="notice" role="status">Password changed. You are signed out everywhere else.</p>` : ''}
<p>Signed in as <strong>${session.email}</strong>.</p>
<h2>Change your password</h2>
${outcome.problem ? html`<p class="notice error" role="alert">${outcome.problem}</p>` : ''}
<form class="stack" method="post" action="/account/password">${csrfField(session.csrfToken)}
  <input type="email" name="email" autocomplete="username" value="${session.email}" hidden>
  <label>Current password <input type="password" name="current" autocomplete="current-password" required></label>
  <label>New password (${CONSOLE_LIMITS.minPasswordLength} characters or more) <input type="password" name="password" autocomplete="new-password" minlength="${CONSOLE_LIMITS.minPasswordLength}" required></label>
  <label>The new password again <input type="password" name="confirm" autocomplete="new-password" required></label>
  <button type="submit">Change the password</button>
  <span class="muted">Every other place you are signed in is signed out, and reset links sent to you stop working.</span>
</form>
<h2>Where you are signed in</h2>
<div class="table-wrap"><table><thead><tr><th scope="col">Browser</th><th scope="col">Signed in</th><th scope="col">Last seen</th></tr></thead><tbody>
${live.map((s) => html`<tr><td>${s.userAgent ?? 'unknown'}${s.id === session.id ? html` <strong>(this one)</strong>` : ''}</td><td>${when(s.createdAt)}</td><td>${when(s.lastSeenAt)}</td></tr>`)}
</tbody></table></div>
<form method="post" action="/account/sign-out-everywhere">${csrfField(session.csrfToken)}<button class="danger" type="submit">Sign out everywhere</button></form>`,
      ),
      statusCode,
    );
  }

  private acceptPage(req: Request, token: string, view: Extract<LinkView, { purpose: 'accept' }>): Html {
    const session = sessionOf(req);
    const title = 'Accept the invitation';
    const what = html`<p>You are invited to <strong>${view.projectName}</strong> as <strong>${view.role}</strong>, as ${view.email}.</p>`;
    if (!session)
      return page(
        { title, csrf: csrfTokenOf(req) },
        html`${what}<p>This address has an account already: <a href="/sign-in?next=${encodeURIComponent(`/invite/${token}`)}">sign in as ${view.email}</a> with its own password to accept.</p>`,
      );
    if (session.userId !== view.userId)
      return page(
        { title, csrf: session.csrfToken, session },
        html`<p class="notice error" role="alert">This invitation is for another account. Sign out, then sign in as the address it was sent to.</p>`,
      );
    return page(
      { title, csrf: session.csrfToken, session },
      html`${what}<form method="post" action="/invite/${token}/accept">${csrfField(session.csrfToken)}<button type="submit">Accept the invitation</button></form>`,
    );
  }

  private signInForm(req: Request, email = '', problem?: string): Html {
    const done = req.query['done'] === 'password';
    return page(
      { title: 'Sign in', csrf: csrfTokenOf(req) },
      html`${problem ? html`<p class="notice error" role="alert">${problem}</p>` : done ? html`<p class="notice" role="status">Password set. Sign in with it.</p>` : ''}
<form class="stack" method="post" action="/sign-in">${csrfField(csrfTokenOf(req))}
  <input type="hidden" name="next" value="${localPath(req.query['next'] ?? field(req, 'next'))}">
  <label>Email <input type="email" name="email" autocomplete="username" required value="${email}"></label>
  <label>Password <input type="password" name="password" autocomplete="current-password" required></label>
  <button type="submit">Sign in</button>
</form>
<p class="muted">Forgot your password? Your operator can send you a one-time reset link.</p>`,
    );
  }

  private passwordForm(
    req: Request,
    kind: 'invite' | 'reset',
    token: string,
    email: string | null,
    problem?: string,
  ): Html {
    const title = kind === 'invite' ? 'Accept the invitation' : 'Set a new password';
    if (!email)
      return page(
        { title, csrf: csrfTokenOf(req) },
        html`<p class="notice error" role="alert">This link is unknown, used or expired. Ask for a new one.</p>`,
      );
    return page(
      { title, csrf: csrfTokenOf(req) },
      html`${problem ? html`<p class="notice error" role="alert">${problem}</p>` : ''}
<form class="stack" method="post" action="/${kind}/${token}">${csrfField(csrfTokenOf(req))}
  <label>Email <input type="email" name="email" autocomplete="username" value="${email}" readonly></label>
  <label>New password (${CONSOLE_LIMITS.minPasswordLength} characters or more) <input type="password" name="password" autocomplete="new-password" minlength="${CONSOLE_LIMITS.minPasswordLength}" required></label>
  <label>The same again <input type="password" name="confirm" autocomplete="new-password" required></label>
  <button type="submit">Set password</button>
</form>`,
    );
  }
}
