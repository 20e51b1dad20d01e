import { Injectable, NotFoundException } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ConsoleAccountsService, type ConsoleMembership, type ConsoleSession } from '#libs/accounts';
import { isUuid } from '#libs/contracts';
import { html, type Html } from './web/html.js';
import { page, type ProjectSection } from './web/layout.js';
import { requireSession, send } from './web/respond.js';

export interface Access {
  readonly session: ConsoleSession;
  readonly member: ConsoleMembership;
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
 * Who may see a project's pages. Every route of a project first finds the signed-in user's
 * membership of the project in the path; without one it answers 404, the same as for a project
 * that does not exist, whether the request is a page or a form's POST.
 */
@Injectable()
export class ProjectAccess {
  constructor(private readonly consoleAccounts: ConsoleAccountsService) {}

  /** The signed-in user's membership of the project (and role, when one is needed); 404 otherwise. */
  async of(req: Request, projectId: string, role?: 'owner'): Promise<Access> {
    const session = requireSession(req);
    const member = isUuid(projectId) ? await this.consoleAccounts.membership(session.userId, projectId) : null;
    if (!member || (role && member.role !== role)) throw new NotFoundException();
    return { session, member };
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
