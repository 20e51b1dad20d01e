import { Controller, Get, Inject, NotFoundException, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import {
  AccountsError,
  AccountsService,
  AUDIT_PAGE_SIZE,
  AuditLog,
  CONSOLE_ROLES,
  ConsoleAccountsService,
  type ConsoleRole,
  type InvitationResult,
} from '#libs/accounts';
import { APP_CONFIG, type AppConfig } from '#libs/config';
import { CAPABILITIES, isUuid, MODEL_PROVIDERS, PROVIDER_GUIDE_CONSOLE, type ChatMessage } from '#libs/contracts';
import { callModel } from '#libs/llm';
import { redactSecret } from '#libs/observability';
import {
  CONVERSATION_RETENTION_HOURS,
  ConversationStore,
  FILE_RETENTION_DAYS,
  FileStore,
  SessionEndRequests,
} from '#libs/persistence';
import { fileDownload } from '#libs/resources';
import { usageChartSvg } from './chart.js';
import { ConsoleReads, PAGE_SIZE, parseRequestCursor, type RequestSummary } from './console-reads.js';
import { confirmPage, projectPage, ProjectAccess, status, type Access } from './project-access.js';
import { Reveals } from './reveals.js';
import { html, trusted, type Html } from './web/html.js';
import { csrfField, projectPath, when, type ProjectSection } from './web/layout.js';
import { modelFormProblem } from './web/customer-words.js';
import { field, queryParam, RoleRequired } from './web/respond.js';

const STATUSES = ['in_progress', 'requires_tool_outputs', 'completed', 'failed', 'expired', 'cancelled'] as const;
/** Messages of a session's conversation its page shows (the latest). */
const SESSION_MESSAGES_SHOWN = 100;
/** How long "send a test request" waits for the provider. */
const TEST_REQUEST_TIMEOUT_MS = 30_000;

/**
 * A project's pages. Every route first finds the signed-in user's membership of the project in
 * the path; without one it answers 404, the same as for a project that does not exist, whether
 * the request is a page or a form's POST. Changes go through the services the operator CLI uses.
 */
@Controller('projects/:projectId')
export class ProjectController {
  constructor(
    private readonly consoleAccounts: ConsoleAccountsService,
    private readonly projectAccess: ProjectAccess,
    private readonly accounts: AccountsService,
    private readonly reads: ConsoleReads,
    private readonly files: FileStore,
    private readonly conversations: ConversationStore,
    private readonly sessionEnds: SessionEndRequests,
    private readonly auditLog: AuditLog,
    private readonly reveals: Reveals,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get()
  root(@Param('projectId') projectId: string, @Res() res: Response): void {
    res.redirect(303, projectPath(projectId));
  }

  @Get('overview')
  async overview(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const a = await this.access(req, projectId, 'viewer');
    const project = await this.accounts.findProject(projectId);
    const plan = this.accounts.plan(project.plan);
    const [usage, days, failures] = await Promise.all([
      this.reads.usageThisPeriod(projectId, project.periodStart),
      this.reads.perDay(projectId, 14),
      this.reads.recentFailures(projectId),
    ]);
    const svg = await usageChartSvg(days);
    this.page(
      res,
      a,
      'overview',
      'Overview',
      html`
<div class="cards">
  <div class="card"><div>Credits left</div><div class="figure" data-testid="credits-left">${project.creditBalance}</div></div>
  <div class="card"><div>Requests this period</div><div class="figure" data-testid="requests-used">${project.requestsUsed} <span class="muted">of ${plan.monthlyQuota}</span></div><div class="muted">since ${when(project.periodStart)}</div></div>
  <div class="card"><div>Credits used this period</div><div class="figure">${usage.credits}</div><div class="muted">${usage.tokens} tokens</div></div>
</div>
<h2>Requests and credits per day (last 14 days, UTC)</h2>
${
  svg
    ? html`<figure class="chart" role="img" aria-label="${`Requests and credits per day: ${days.map((d) => `${d.day}: ${d.requests} requests, ${d.credits} credits`).join('; ')}`}">${trusted(svg)}</figure>`
    : html`<p class="muted">The chart could not be drawn. ${days.map((d) => `${d.day}: ${d.requests} requests, ${d.credits} credits. `)}</p>`
}
<h2>Recent failures</h2>
${failures.length ? this.requestTable(projectId, failures) : html`<p class="muted">No failed or expired requests.</p>`}`,
    );
  }

  @Get('keys')
  async keys(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const a = await this.access(req, projectId, 'viewer');
    await this.keysPage(a, req, res, (await this.reveals.take(a.session.id, 'api-key')) ?? undefined);
  }

  @Post('keys')
  async issueKey(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const a = await this.access(req, projectId, 'developer');
    const label = field(req, 'label').trim().slice(0, 100);
    const { key, record } = await this.accounts.createApiKey(projectId, label || `console (${a.session.email})`);
    await this.consoleAccounts.recordKeyIssuer(record.id, a.session.userId);
    await a.audit('key.issue', record.id, { prefix: record.prefix, label: record.label });
    // Shown once, by the page this redirects to: a reload of that page issues nothing.
    await this.reveals.keep(a.session.id, 'api-key', key);
    res.redirect(303, projectPath(projectId, 'keys'));
  }

  @Get('keys/:keyId/revoke')
  async confirmRevoke(
    @Param('projectId') projectId: string,
    @Param('keyId') keyId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.access(req, projectId, 'developer');
    const key = (await this.accounts.listApiKeys(projectId)).find((k) => k.id === keyId && !k.revokedAt);
    if (!key) throw new NotFoundException();
    await this.assertMayRevoke(a, key.id);
    this.page(
      res,
      a,
      'keys',
      'Revoke an API key',
      html`
<p class="notice error">Revoke <code>${key.prefix}…</code>${key.label ? html` (${key.label})` : ''}? Every request with it is refused from then on, on every api replica. This cannot be undone.</p>
<form class="inline" method="post" action="${projectPath(projectId, `keys/${key.id}/revoke`)}">${csrfField(a.session.csrfToken)}
  <button class="danger" type="submit">Revoke the key</button> <a href="${projectPath(projectId, 'keys')}">Keep it</a>
</form>`,
    );
  }

  @Post('keys/:keyId/revoke')
  async revoke(
    @Param('projectId') projectId: string,
    @Param('keyId') keyId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.access(req, projectId, 'developer');
    const key = (await this.accounts.listApiKeys(projectId)).find((k) => k.id === keyId);
    if (!key) throw new NotFoundException();
    await this.assertMayRevoke(a, key.id);
    await this.accounts.revokeApiKey(key.id, projectId);
    await a.audit('key.revoke', key.id, { prefix: key.prefix });
    res.redirect(303, `${projectPath(projectId, 'keys')}?notice=revoked`);
  }

  @Get('model')
  async model(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.modelPage(await this.access(req, projectId, 'viewer'), req, res);
  }

  @Post('model')
  async setModel(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const a = await this.access(req, projectId, 'owner');
    const apiKey = field(req, 'api_key').trim();
    try {
      const provider = field(req, 'provider');
      const model = field(req, 'model');
      const baseUrl = field(req, 'base_url').trim() || null;
      await this.accounts.setModel(projectId, {
        provider,
        model,
        baseUrl,
        settings: {
          region: field(req, 'region').trim() || undefined,
          resourceName: field(req, 'resource').trim() || undefined,
          apiVersion: field(req, 'api_version').trim() || undefined,
        },
        apiKey: apiKey || null,
        keepSecret: field(req, 'clear_key') !== 'on',
      });
      await a.audit('model.set', null, {
        provider,
        model,
        base_url: baseUrl,
        key: apiKey ? 'replaced' : field(req, 'clear_key') === 'on' ? 'cleared' : 'kept',
      });
    } catch (e) {
      // A missing provider setting is named by the form's field (the service's message names the CLI's flag).
      if (e instanceof AccountsError) {
        const problem =
          modelFormProblem(field(req, 'provider'), {
            region: field(req, 'region').trim(),
            resource: field(req, 'resource').trim(),
            baseUrl: field(req, 'base_url').trim(),
          }) ?? e.message;
        return this.modelPage(a, req, res, { problem }, 400);
      }
      throw e;
    }
    res.redirect(303, `${projectPath(projectId, 'model')}?notice=model`);
  }

  /** One small call to the configured model, as the worker makes it: its answer or its error (with the key removed). */
  @Post('model/test')
  async testModel(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const a = await this.access(req, projectId, 'owner');
    const credentials = await this.accounts.modelCredentials(projectId);
    if (!credentials) return this.modelPage(a, req, res, { problem: 'No model is configured yet.' }, 400);
    const messages: ChatMessage[] = [
      { role: 'user', content: 'This is a test request from the console. Reply with a short greeting.' },
    ];
    try {
      const turn = await callModel({
        ...credentials,
        messages,
        tools: [],
        maxOutputTokens: 64,
        signal: AbortSignal.timeout(TEST_REQUEST_TIMEOUT_MS),
      });
      await this.modelPage(a, req, res, {
        answer: `${turn.content || '(no text)'}`,
        detail: `${turn.model}: ${turn.usage.inputTokens} input and ${turn.usage.outputTokens} output tokens`,
      });
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      await this.modelPage(a, req, res, { failure: redactSecret(message, credentials.apiKey) });
    }
  }

  @Get('plan')
  async plan(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const a = await this.access(req, projectId, 'viewer');
    const project = await this.accounts.findProject(projectId);
    const plan = this.accounts.plan(project.plan);
    this.page(
      res,
      a,
      'plan',
      'Plan and capabilities',
      html`
<p>Plan <strong>${plan.name}</strong>: ${plan.monthlyQuota} requests per billing period, which started ${when(project.periodStart)}.</p>
<p>Credits: ${project.creditBalance}${project.creditsPurchased ? '' : ' (none purchased yet: sessions need purchased credits)'}.</p>
<div class="table-wrap"><table><thead><tr><th scope="col">Capability</th><th scope="col">In the plan</th><th scope="col">Enabled</th><th scope="col">Credits per use</th></tr></thead><tbody>
${CAPABILITIES.map((c) => html`<tr><td>${c}</td><td>${plan.capabilities.includes(c) ? 'yes' : 'no'}</td><td>${project.capabilities.includes(c) ? 'yes' : 'no'}</td><td>${this.config.capabilitySurcharges[c]}</td></tr>`)}
</tbody></table></div>
<p class="muted">Your operator changes plans and capabilities.</p>`,
    );
  }

  @Get('requests')
  async requests(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const a = await this.access(req, projectId, 'viewer');
    const statusFilter = STATUSES.find((s) => s === queryParam(req, 'status'));
    const capability = CAPABILITIES.find((c) => c === queryParam(req, 'capability'));
    const before = parseRequestCursor(queryParam(req, 'before'));
    const rows = await this.reads.requests(projectId, { status: statusFilter, capability, before });
    const next =
      rows.length === PAGE_SIZE
        ? new URLSearchParams({
            ...(statusFilter ? { status: statusFilter } : {}),
            ...(capability ? { capability } : {}),
            before: rows.at(-1)!.cursor,
          })
        : null;
    this.page(
      res,
      a,
      'requests',
      'Requests',
      html`
<form class="inline" method="get" action="${projectPath(projectId, 'requests')}" aria-label="Filter requests">
  <label>Status <select name="status"><option value="">any</option>${STATUSES.map((s) => html`<option value="${s}"${s === statusFilter ? html` selected` : ''}>${s.replaceAll('_', ' ')}</option>`)}</select></label>
  <label>Capability <select name="capability"><option value="">any</option>${CAPABILITIES.map((c) => html`<option value="${c}"${c === capability ? html` selected` : ''}>${c}</option>`)}</select></label>
  <button type="submit">Filter</button>
</form>
${rows.length ? this.requestTable(projectId, rows) : html`<p class="muted">No requests${statusFilter || capability ? ' match' : ' yet'}.</p>`}
${next ? html`<p><a href="${projectPath(projectId, 'requests')}?${next.toString()}">Older requests</a></p>` : ''}`,
    );
  }

  @Get('requests/:requestId')
  async request(
    @Param('projectId') projectId: string,
    @Param('requestId') requestId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.access(req, projectId, 'viewer');
    const found = isUuid(requestId) ? await this.reads.request(projectId, requestId) : null;
    if (!found) throw new NotFoundException();
    const { request: r, events, stops, files } = found;
    const last = stops.get(Math.max(0, ...stops.keys()));
    this.page(
      res,
      a,
      'requests',
      `Request ${r.id}`,
      html`
<div class="cards">
  <div class="card"><div>Status</div><div class="figure">${status(r.status)}</div>${r.errorCode ? html`<div>${r.errorCode}</div>` : ''}</div>
  <div class="card"><div>Credits</div><div class="figure">${r.credits}</div><div class="muted">${r.tokens} tokens</div></div>
  <div class="card"><div>Capabilities</div><div>${r.capabilities.join(', ') || 'none'}</div>${r.sessionId ? html`<div class="muted">session <code>${r.sessionId}</code></div>` : ''}</div>
</div>
<h2>Timeline</h2>
<ol class="timeline">
${events.map((e) => {
  const stop = typeof e.data['stop'] === 'number' ? stops.get(e.data['stop']) : undefined;
  const figures = [
    typeof e.data['creditsReserved'] === 'number' ? `${e.data['creditsReserved']} credits reserved` : '',
    typeof e.data['creditsCharged'] === 'number' ? `${e.data['creditsCharged']} credits charged` : '',
    typeof e.data['creditsRemaining'] === 'number' ? `${e.data['creditsRemaining']} left` : '',
    typeof e.data['inputTokens'] === 'number'
      ? `${Number(e.data['inputTokens']) + Number(e.data['outputTokens'] ?? 0)} tokens`
      : '',
    typeof e.data['stop'] === 'number' ? `stop ${e.data['stop']}` : '',
  ]
    .filter(Boolean)
    .join(', ');
  return html`<li>${when(e.recordedAt)} <strong>${e.type.replace(/^agent-request\./, '').replace(/\.v\d+$/, '')}</strong>${figures ? html` <span class="muted">(${figures})</span>` : ''}
  ${stop?.toolCalls?.length ? html`<div>Tool calls: ${stop.toolCalls.map((t) => html`<code>${t.name}</code> `)}</div>` : ''}
  ${stop?.error ? html`<div class="status-failed">${stop.error.code}: ${stop.error.message}</div>` : ''}</li>`;
})}
</ol>
<h2>Final message</h2>
${last?.message ? html`<pre>${last.message}</pre>` : html`<p class="muted">No message${r.status === 'in_progress' ? ' yet' : ''}.</p>`}
${files.length ? html`<h2>Files</h2><ul>${files.map((f) => html`<li><a href="${projectPath(projectId, `files/${f.id}`)}" download>${f.name}</a> <span class="muted">(kept ${FILE_RETENTION_DAYS} days)</span></li>`)}</ul>` : ''}`,
    );
  }

  /** A generated file of the project, as the api's GET /v1/files/{id} serves it (same store, same headers). */
  @Get('files/:fileId')
  async file(
    @Param('projectId') projectId: string,
    @Param('fileId') fileId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.access(req, projectId, 'viewer');
    const file = isUuid(fileId) ? await this.files.get(fileId, a.member.projectId) : undefined;
    if (!file) throw new NotFoundException();
    const { body, headers } = fileDownload(file);
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    res.setHeader('Cache-Control', 'private, no-store');
    res.status(200).end(body);
  }

  @Get('sessions')
  async sessions(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const a = await this.access(req, projectId, 'viewer');
    const rows = await this.reads.sessions(projectId);
    this.page(
      res,
      a,
      'sessions',
      'Sessions',
      rows.length
        ? html`<div class="table-wrap"><table><thead><tr><th scope="col">Session</th><th scope="col">Status</th><th scope="col">Messages</th><th scope="col">Created</th><th scope="col">Last activity</th></tr></thead><tbody>
${rows.map((s) => html`<tr><td><a class="mono" href="${projectPath(projectId, `sessions/${s.id}`)}">${s.id.slice(0, 8)}…</a></td><td>${status(s.status)}</td><td>${s.messages}</td><td>${when(s.createdAt)}</td><td>${when(s.lastActivityAt)}</td></tr>`)}
</tbody></table></div>`
        : html`<p class="muted">No sessions yet.</p>`,
    );
  }

  @Get('sessions/:sessionId')
  async session(
    @Param('projectId') projectId: string,
    @Param('sessionId') sessionId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await this.sessionPage(await this.access(req, projectId, 'viewer'), sessionId, res);
  }

  /** Asks before ending a session (its page links here; the form POSTs to the same path). */
  @Get('sessions/:sessionId/end')
  async confirmEndSession(
    @Param('projectId') projectId: string,
    @Param('sessionId') sessionId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.access(req, projectId, 'developer');
    if (!(await this.activeSession(a, sessionId, res))) return;
    confirmPage(res, a, 'sessions', {
      title: 'End a session',
      question: html`End the session <code>${sessionId}</code>? Its later messages are refused (410 session_ended), and its conversation is no longer continued. This cannot be undone.`,
      action: projectPath(projectId, `sessions/${sessionId}/end`),
      button: 'End the session',
      back: projectPath(projectId, `sessions/${sessionId}`),
      keep: 'Keep it going',
    });
  }

  /** Asks for the session's end: a worker sends its workflow the end Update (docs/console.md, "Ending a session"). */
  @Post('sessions/:sessionId/end')
  async endSession(
    @Param('projectId') projectId: string,
    @Param('sessionId') sessionId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.access(req, projectId, 'developer');
    if (!(await this.activeSession(a, sessionId, res))) return;
    await this.sessionEnds.request(a.member.projectId, sessionId);
    await a.audit('session.end', sessionId);
    res.redirect(303, `${projectPath(projectId, `sessions/${sessionId}`)}?notice=ending`);
  }

  /** The project's audit log, newest first: owners only. */
  @Get('audit')
  async audit(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const a = await this.access(req, projectId, 'owner');
    const entries = await this.auditLog.list(projectId, { before: queryParam(req, 'before') });
    const last = entries.at(-1);
    this.page(
      res,
      a,
      'audit',
      'Audit log',
      html`<p class="muted">Every change made in this console or by the service's operator, newest first.</p>
${
  entries.length
    ? html`<div class="table-wrap"><table><thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">From</th><th scope="col">What</th><th scope="col">Of</th><th scope="col">Details</th></tr></thead><tbody>
${entries.map((e) => html`<tr><td>${when(e.at)}</td><td>${e.actor.replace(/^user:/, '')}</td><td class="mono">${e.address ?? ''}</td><td>${e.action}</td><td class="mono">${e.target ?? ''}</td><td class="mono">${Object.keys(e.detail).length ? JSON.stringify(e.detail) : ''}</td></tr>`)}
</tbody></table></div>
${entries.length === AUDIT_PAGE_SIZE && last ? html`<p><a href="${`${projectPath(projectId, 'audit')}?before=${last.id}`}">Older entries</a></p>` : ''}`
    : html`<p class="muted">Nothing has changed yet.</p>`
}`,
    );
  }

  @Get('members')
  async members(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.membersPage(await this.access(req, projectId, 'viewer'), req, res);
  }

  @Post('members')
  async invite(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const a = await this.access(req, projectId, 'owner');
    const asked = field(req, 'role');
    const role: ConsoleRole = (CONSOLE_ROLES as readonly string[]).includes(asked)
      ? (asked as ConsoleRole)
      : 'developer';
    try {
      const r = await this.consoleAccounts.invite(projectId, field(req, 'email'), role, a.session.userId);
      await a.audit(r.roleChanged ? 'member.role' : 'member.invite', r.email, { role, mailed: r.mailed });
      await this.membersPage(a, req, res, { invited: r });
    } catch (e) {
      if (e instanceof AccountsError) return this.membersPage(a, req, res, { problem: e.message }, 400);
      throw e;
    }
  }

  /** Asks before removing a member (the list links here; the form POSTs to the same path). */
  @Get('members/:userId/remove')
  async confirmRemove(
    @Param('projectId') projectId: string,
    @Param('userId') userId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.access(req, projectId, 'owner');
    const found = isUuid(userId)
      ? (await this.consoleAccounts.members(projectId)).find((m) => m.userId === userId)
      : undefined;
    if (!found) throw new NotFoundException();
    confirmPage(res, a, 'members', {
      title: 'Remove a member',
      question: html`Remove <strong>${found.email}</strong> (${found.role}) from the project? ${found.active ? 'They lose every page of it at their next request.' : 'Their invitation is withdrawn: its link no longer accepts.'}`,
      action: projectPath(projectId, `members/${userId}/remove`),
      button: 'Remove the member',
      back: projectPath(projectId, 'members'),
      keep: 'Keep them',
    });
  }

  @Post('members/:userId/remove')
  async remove(
    @Param('projectId') projectId: string,
    @Param('userId') userId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.access(req, projectId, 'owner');
    if (!isUuid(userId)) throw new NotFoundException();
    try {
      await this.consoleAccounts.removeMember(projectId, userId);
      await a.audit('member.remove', userId);
    } catch (e) {
      if (e instanceof AccountsError) return this.membersPage(a, req, res, { problem: e.message }, 400);
      throw e;
    }
    res.redirect(303, `${projectPath(projectId, 'members')}?notice=removed`);
  }

  private access(req: Request, projectId: string, role: ConsoleRole): Promise<Access> {
    return this.projectAccess.of(req, projectId, role);
  }

  /** Whether the session is this project's and active; a page saying it is not, otherwise (404 if none). */
  private async activeSession(a: Access, sessionId: string, res: Response): Promise<boolean> {
    const found = isUuid(sessionId) ? await this.reads.session(a.member.projectId, sessionId) : null;
    if (!found) throw new NotFoundException();
    if (found.status === 'active') return true;
    await this.sessionPage(a, sessionId, res, `The session is ${found.status} already.`, 400);
    return false;
  }

  /** A developer revokes the keys they issued in the console; an owner any key. */
  private async assertMayRevoke(a: Access, keyId: string): Promise<void> {
    if (a.member.role === 'owner') return;
    if ((await this.consoleAccounts.keyIssuer(keyId)) !== a.session.userId)
      throw new RoleRequired(a.member.role, 'owner');
  }

  private page(res: Response, a: Access, section: ProjectSection, title: string, body: Html, statusCode = 200): void {
    projectPage(res, a, section, title, body, statusCode);
  }

  private requestTable(projectId: string, rows: readonly RequestSummary[]): Html {
    return html`<div class="table-wrap"><table><thead><tr><th scope="col">Request</th><th scope="col">Status</th><th scope="col">Capabilities</th><th scope="col">Credits</th><th scope="col">Created</th></tr></thead><tbody>
${rows.map((r) => html`<tr><td><a class="mono" href="${projectPath(projectId, `requests/${r.id}`)}">${r.id.slice(0, 8)}…</a></td><td>${status(r.status)}${r.errorCode ? html` <span class="muted">${r.errorCode}</span>` : ''}</td><td>${r.capabilities.join(', ') || html`<span class="muted">none</span>`}</td><td>${r.credits}</td><td>${when(r.createdAt)}</td></tr>`)}
</tbody></table></div>`;
  }

  private async sessionPage(
    a: Access,
    sessionId: string,
    res: Response,
    problem?: string,
    statusCode = 200,
  ): Promise<void> {
    const projectId = a.member.projectId;
    const found = isUuid(sessionId) ? await this.reads.session(projectId, sessionId) : null;
    if (!found) throw new NotFoundException();
    const [ending, messages, requests] = await Promise.all([
      this.sessionEnds.pending(projectId, sessionId),
      this.conversations.latest(sessionId, projectId, SESSION_MESSAGES_SHOWN),
      this.reads.sessionRequests(projectId, sessionId),
    ]);
    this.page(
      res,
      a,
      'sessions',
      `Session ${sessionId}`,
      html`
${problem ? html`<p class="notice error" role="alert">${problem}</p>` : ''}
<div class="cards">
  <div class="card"><div>Status</div><div class="figure" data-testid="session-status">${status(found.status)}</div>${ending && found.status === 'active' ? html`<div class="muted">ending asked for ${when(ending.requestedAt)}</div>` : ''}</div>
  <div class="card"><div>Messages</div><div class="figure">${found.messages}</div></div>
  <div class="card"><div>Created</div><div>${when(found.createdAt)}</div><div class="muted">last activity ${when(found.lastActivityAt)}</div></div>
</div>
${
  found.status === 'active' && !ending
    ? html`<p><a class="button danger" href="${projectPath(projectId, `sessions/${sessionId}/end`)}">End the session</a> <span class="muted">Later messages are refused (410 session_ended).</span></p>`
    : ''
}
<h2>Conversation</h2>
${
  messages.length
    ? html`<ol class="conversation">${messages.map(({ message: m }) => html`<li class="message-${m.role}"><div class="muted">${m.role === 'tool' ? `tool ${m.name}` : m.role}</div>${m.content ? html`<pre>${m.content}</pre>` : ''}${m.role === 'assistant' && m.toolCalls?.length ? html`<div>Tool calls: ${m.toolCalls.map((t) => html`<code>${t.name}</code> `)}</div>` : ''}</li>`)}</ol>`
    : html`<p class="muted">No messages kept: a session's conversation is kept ${CONVERSATION_RETENTION_HOURS} hours after its last message.</p>`
}
<h2>Requests of this session</h2>
${requests.length ? this.requestTable(projectId, requests) : html`<p class="muted">None yet.</p>`}`,
      statusCode,
    );
  }

  private async keysPage(a: Access, _req: Request, res: Response, issued?: string): Promise<void> {
    const keys = await this.accounts.listApiKeys(a.member.projectId);
    const projectId = a.member.projectId;
    this.page(
      res,
      a,
      'keys',
      'API keys',
      html`
${
  issued
    ? html`<div class="notice" role="status"><p><strong>Your new key.</strong> It is shown this once: store it now.</p>
<p class="secret"><code id="new-key" data-testid="new-key">${issued}</code> <button type="button" class="secondary" data-copy="new-key">Copy</button></p></div>`
    : ''
}
<form class="inline" method="post" action="${projectPath(projectId, 'keys')}">${csrfField(a.session.csrfToken)}
  <label>Label <input name="label" maxlength="100" placeholder="e.g. production"></label>
  <button type="submit">Issue a key</button>
</form>
<h2>Keys</h2>
<div class="table-wrap"><table><thead><tr><th scope="col">Prefix</th><th scope="col">Label</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">State</th></tr></thead><tbody>
${keys.map((k) => html`<tr><td><code>${k.prefix}…</code></td><td>${k.label ?? ''}</td><td>${when(k.createdAt)}</td><td>${when(k.lastUsedAt)}</td><td>${k.revokedAt ? html`revoked ${when(k.revokedAt)}` : html`<a href="${projectPath(projectId, `keys/${k.id}/revoke`)}" aria-label="${`Revoke ${k.prefix}`}">Revoke</a>`}</td></tr>`)}
</tbody></table></div>`,
    );
  }

  private async modelPage(
    a: Access,
    req: Request,
    res: Response,
    outcome: { problem?: string; answer?: string; detail?: string; failure?: string } = {},
    statusCode = 200,
  ): Promise<void> {
    const projectId = a.member.projectId;
    const m = await this.accounts.modelConfig(projectId);
    const value = (name: string, stored: string | null | undefined): string =>
      outcome.problem ? field(req, name) : (stored ?? '');
    const provider = outcome.problem ? field(req, 'provider') : m?.provider;
    this.page(
      res,
      a,
      'model',
      'Model',
      html`
${outcome.problem ? html`<p class="notice error" role="alert">${outcome.problem}</p>` : ''}
${outcome.answer !== undefined ? html`<div class="notice" role="status" data-testid="test-answer"><p><strong>The model answered:</strong></p><pre>${outcome.answer}</pre><p class="muted">${outcome.detail}</p></div>` : ''}
${outcome.failure !== undefined ? html`<div class="notice error" role="alert" data-testid="test-error"><p><strong>The test request failed:</strong></p><pre>${outcome.failure}</pre></div>` : ''}
<p>${m ? html`Now: <strong>${m.provider}</strong> <code>${m.model}</code>${m.baseUrl ? html` at <code>${m.baseUrl}</code>` : ''}, ${m.hasKey ? 'a key is stored (encrypted; it is never shown)' : 'no key stored'}.` : 'No model is configured: requests fail until one is.'}</p>
<form class="stack" method="post" action="${projectPath(projectId, 'model')}">${csrfField(a.session.csrfToken)}
  <label>Provider <select name="provider" required>${MODEL_PROVIDERS.map((p) => html`<option value="${p}"${p === provider ? html` selected` : ''}>${p}</option>`)}</select></label>
  <label>Model <input name="model" required value="${value('model', m?.model)}"></label>
  <label>Base URL <span class="muted">(optional: an OpenAI-compatible server, a proxy, a gateway)</span> <input name="base_url" type="url" value="${value('base_url', m?.baseUrl)}"></label>
  <label>Region <span class="muted">(bedrock)</span> <input name="region" value="${value('region', m?.settings.region)}"></label>
  <label>Resource <span class="muted">(azure-openai)</span> <input name="resource" value="${value('resource', m?.settings.resourceName)}"></label>
  <label>API version <span class="muted">(azure-openai)</span> <input name="api_version" value="${value('api_version', m?.settings.apiVersion)}"></label>
  <label>API key <span class="muted">(write-only; leave empty to keep the stored one)</span> <input name="api_key" type="password" autocomplete="off"></label>
  <label><span><input type="checkbox" name="clear_key"> Remove the stored key</span></label>
  <button type="submit">Save</button>
</form>
<details><summary>Providers</summary><ul>${MODEL_PROVIDERS.map((p) => html`<li><strong>${p}</strong>: ${PROVIDER_GUIDE_CONSOLE[p]}</li>`)}</ul></details>
<h2>Send a test request</h2>
<form method="post" action="${projectPath(projectId, 'model/test')}">${csrfField(a.session.csrfToken)}<button type="submit" class="secondary">Send a test request</button></form>`,
      statusCode,
    );
  }

  private async membersPage(
    a: Access,
    req: Request,
    res: Response,
    outcome: { problem?: string; invited?: InvitationResult } = {},
    statusCode = 200,
  ): Promise<void> {
    const projectId = a.member.projectId;
    const owner = a.member.role === 'owner';
    const invited = outcome.invited;
    const members = await this.consoleAccounts.members(projectId);
    this.page(
      res,
      a,
      'members',
      'Members',
      html`
${outcome.problem ? html`<p class="notice error" role="alert">${outcome.problem}</p>` : ''}
${
  invited
    ? invited.roleChanged
      ? html`<p class="notice" role="status">${invited.email} was a member already: their role is now ${invited.role}.</p>`
      : html`<div class="notice" role="status"><p>${invited.email} is invited as ${invited.role}. The invitation is theirs to accept.</p>${
          invited.link
            ? html`<p>Send them this one-time link (valid 7 days; shown once). It lets a new account set its password, and an existing account accept after signing in:</p><p class="secret"><code id="invite-link" data-testid="invite-link">${invited.link}</code> <button type="button" class="secondary" data-copy="invite-link">Copy</button></p>`
            : html`<p>The link went to them by mail.</p>`
        }</div>`
    : ''
}
<div class="table-wrap"><table><thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Since</th>${owner ? html`<th scope="col"><span class="visually-hidden">Actions</span></th>` : ''}</tr></thead><tbody>
${members.map((m) => html`<tr><td>${m.email}${m.active ? '' : html` <span class="muted">(invited)</span>`}</td><td>${m.role}</td><td>${when(m.since)}</td>${owner ? html`<td>${m.userId === a.session.userId ? '' : html`<a href="${projectPath(projectId, `members/${m.userId}/remove`)}" aria-label="${`Remove ${m.email}`}">Remove</a>`}</td>` : ''}</tr>`)}
</tbody></table></div>
${
  owner
    ? html`<h2>Invite someone</h2>
<form class="inline" method="post" action="${projectPath(projectId, 'members')}">${csrfField(a.session.csrfToken)}
  <label>Email <input type="email" name="email" required value="${outcome.problem ? field(req, 'email') : ''}"></label>
  <label>Role <select name="role">${CONSOLE_ROLES.map((r) => html`<option value="${r}"${r === 'developer' ? html` selected` : ''}>${r}</option>`)}</select></label>
  <button type="submit">Invite</button>
</form>`
    : html`<p class="muted">The project's owners invite and remove members.</p>`
}
<h2>What each role may do</h2>
<ul class="muted">
  <li><strong>owner</strong>: everything, including members, the model settings and the audit log.</li>
  <li><strong>developer</strong>: API keys (revokes the ones they issued), requests, sessions, webhooks and MCP servers.</li>
  <li><strong>viewer</strong>: reads every page, changes nothing.</li>
</ul>`,
      statusCode,
    );
  }
}
