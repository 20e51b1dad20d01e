import { Injectable, NotFoundException } from '@nestjs/common';
import type { Request, Response } from 'express';
import {
  AuditLog,
  ConsoleAccountsService,
  roleAllows,
  type ConsoleMembership,
  type ConsoleRole,
  type ConsoleSession,
} from '#libs/accounts';
import { isUuid } from '#libs/contracts';
import { html, type Html } from './web/html.js';
import { csrfField, page, type ProjectSection } from './web/layout.js';
import { requireSession, RoleRequired, send } from './web/respond.js';

export interface Access {
  readonly session: ConsoleSession;
  readonly member: ConsoleMembership;
  /** Writes a change this member made to the project's audit log (never a secret in `detail`). */
  audit(action: string, target?: string | null, detail?: Record<string, unknown>): Promise<void>;
}

/** The notices a redirect after a change names (`?notice=<name>`). */
const NOTICES: Record<string, string> = {
  revoked: 'The key is revoked: the api refuses it from now on.',
  model: 'Model configuration saved.',
  removed: 'The member is removed.',
  'webhook-removed':
    'The endpoint is removed: nothing more is sent to it, retries included. Its deliveries stay listed.',
  resent: 'The delivery is queued to be sent again: it appears below as a new delivery, with its own attempts.',
  ending: 'The session is ending: a worker sends it the end now (its status changes once the session has recorded it).',
  'mcp-tools': 'The allowed tools are saved: runs that start from now on offer those.',
  'mcp-removed': 'The MCP server is removed: runs that start from now on no longer offer its tools.',
};

/**
 * Who may see and change a project's pages. Every route of a project first finds the signed-in
 * user's membership of the project in the path; without one it answers 404, the same as for a
 * project that does not exist, whether the request is a page or a form's POST. Then the route's
 * role: a member whose role does not allow it gets 403, saying which role would (DESIGN.md
 * section 11, "console roles"; the table is in docs/security.md and console-roles.e2e-spec.ts).
 */
@Injectable()
export class ProjectAccess {
  constructor(
    private readonly consoleAccounts: ConsoleAccountsService,
    private readonly auditLog: AuditLog,
  ) {}

  /** The signed-in user's membership of the project with at least `needed`; 404 or 403 otherwise. */
  async of(req: Request, projectId: string, needed: ConsoleRole): Promise<Access> {
    const session = requireSession(req);
    const member = isUuid(projectId) ? await this.consoleAccounts.membership(session.userId, projectId) : null;
    if (!member) throw new NotFoundException();
    if (!roleAllows(member.role, needed)) throw new RoleRequired(member.role, needed);
    const by = { actor: `user:${session.email}`, address: req.ip ?? null };
    return {
      session,
      member,
      audit: (action, target = null, detail = {}) => this.auditLog.record(member.projectId, by, action, target, detail),
    };
  }
}

/** A status as the pages show it (coloured by the stylesheet). */
export const status = (s: string): Html => html`<span class="status-${s}">${s.replaceAll('_', ' ')}</span>`;

/** Sends one of a project's pages, with the notice its query names. */
export function projectPage(
  res: Response,
  a: Access,
  section: ProjectSection,
  title: string,
  body: Html,
  statusCode = 200,
): void {
  const notice = NOTICES[String(res.req.query['notice'])];
  send(
    res,
    page(
      { title, csrf: a.session.csrfToken, session: a.session, project: a.member, section },
      html`${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}${body}`,
    ),
    statusCode,
  );
}

/**
 * The page that asks before a change that cannot be undone (the GET of the change's path; its
 * form POSTs to the same path): what happens, the button that does it, and a way back.
 */
export function confirmPage(
  res: Response,
  a: Access,
  section: ProjectSection,
  confirm: { title: string; question: Html; action: string; button: string; back: string; keep: string },
): void {
  projectPage(
    res,
    a,
    section,
    confirm.title,
    html`<p class="notice error">${confirm.question}</p>
<form class="inline" method="post" action="${confirm.action}">${csrfField(a.session.csrfToken)}
  <button class="danger" type="submit">${confirm.button}</button> <a href="${confirm.back}">${confirm.keep}</a>
</form>`,
  );
}
