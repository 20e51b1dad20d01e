import { Controller, Get, NotFoundException, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AccountsError, McpServersService } from '#libs/accounts';
import { isUuid, WEBHOOK_EVENTS } from '#libs/contracts';
import { WebhookStore } from '#libs/webhooks';
import { Reveals } from './reveals.js';
import { confirmPage, projectPage, ProjectAccess, status, type Access } from './project-access.js';
import { html } from './web/html.js';
import { csrfField, projectPath, when } from './web/layout.js';
import { privateAddressRefusal, urlProblem } from './web/customer-words.js';
import { field } from './web/respond.js';

/** Deliveries the Webhooks page lists (the newest). */
const DELIVERIES_SHOWN = 50;

/** Every value of a form field given several times (checkboxes). */
function fields(req: Request, name: string): string[] {
  const v = (req.body as Record<string, unknown> | undefined)?.[name];
  return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
}

/**
 * A project's webhook endpoints and deliveries, and its MCP servers, through the services the
 * operator CLI uses (`WebhookStore`, `McpServersService`). Every route first checks the signed-in
 * user's membership of the project in the path (404 without one); every query names the project.
 */
@Controller('projects/:projectId')
export class IntegrationsController {
  constructor(
    private readonly projectAccess: ProjectAccess,
    private readonly webhooks: WebhookStore,
    private readonly mcpServers: McpServersService,
    private readonly reveals: Reveals,
  ) {}

  @Get('webhooks')
  async webhooksPage(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const a = await this.projectAccess.of(req, projectId, 'viewer');
    const added = await this.reveals.take(a.session.id, 'webhook-secret');
    await this.renderWebhooks(
      a,
      req,
      res,
      added ? { added: JSON.parse(added) as { url: string; secret: string } } : {},
    );
  }

  @Post('webhooks')
  async addWebhook(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const a = await this.projectAccess.of(req, projectId, 'developer');
    try {
      const { subscription, secret } = await this.webhooks.add(a.member.projectId, {
        url: field(req, 'url').trim(),
        events: fields(req, 'events'),
      });
      await a.audit('webhook.add', subscription.id, { url: subscription.url, events: subscription.events });
      // Shown once, by the page this redirects to: a reload of that page adds nothing.
      await this.reveals.keep(a.session.id, 'webhook-secret', JSON.stringify({ url: subscription.url, secret }));
      res.redirect(303, projectPath(projectId, 'webhooks'));
    } catch (e) {
      if (e instanceof AccountsError)
        return this.renderWebhooks(a, req, res, { problem: this.webhookRefusal(field(req, 'url').trim(), e) }, 400);
      throw e;
    }
  }

  /**
   * A refused endpoint in the customer's words: a malformed URL says what to change; one the
   * store's URL check still refuses was refused for its address (the store's message names the
   * operator's setting); anything else (the events) as the store says it.
   */
  private webhookRefusal(url: string, e: AccountsError): string {
    const malformed = urlProblem(url, 'webhook');
    if (malformed) return malformed;
    try {
      this.webhooks.checkUrl(url);
    } catch (refused) {
      if (refused instanceof AccountsError) return privateAddressRefusal(url);
      throw refused;
    }
    return e.message;
  }

  /** Asks before removing an endpoint (the list links here; the form POSTs to the same path). */
  @Get('webhooks/:webhookId/remove')
  async confirmRemoveWebhook(
    @Param('projectId') projectId: string,
    @Param('webhookId') webhookId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.projectAccess.of(req, projectId, 'developer');
    const endpoint = isUuid(webhookId)
      ? (await this.webhooks.list(a.member.projectId)).find((e) => e.id === webhookId)
      : undefined;
    if (!endpoint) throw new NotFoundException();
    confirmPage(res, a, 'webhooks', {
      title: 'Remove a webhook endpoint',
      question: html`Remove the endpoint <code>${endpoint.url}</code>? Nothing more is sent to it, retries included. Its deliveries stay listed.`,
      action: projectPath(projectId, `webhooks/${endpoint.id}/remove`),
      button: 'Remove the endpoint',
      back: projectPath(projectId, 'webhooks'),
      keep: 'Keep it',
    });
  }

  @Post('webhooks/:webhookId/remove')
  async removeWebhook(
    @Param('projectId') projectId: string,
    @Param('webhookId') webhookId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.projectAccess.of(req, projectId, 'developer');
    try {
      await this.webhooks.remove(a.member.projectId, webhookId);
      await a.audit('webhook.remove', webhookId);
    } catch (e) {
      if (e instanceof AccountsError) throw new NotFoundException();
      throw e;
    }
    res.redirect(303, `${projectPath(projectId, 'webhooks')}?notice=webhook-removed`);
  }

  /** Sends a finished delivery again: a new delivery that the worker's dispatcher starts (docs/console.md, "Resending a webhook"). */
  @Post('webhooks/deliveries/:deliveryId/resend')
  async resend(
    @Param('projectId') projectId: string,
    @Param('deliveryId') deliveryId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.projectAccess.of(req, projectId, 'developer');
    if (!isUuid(deliveryId)) throw new NotFoundException();
    try {
      await this.webhooks.resend(a.member.projectId, deliveryId);
      await a.audit('webhook.resend', deliveryId);
    } catch (e) {
      if (e instanceof AccountsError) {
        if (e.message.startsWith('no webhook delivery')) throw new NotFoundException();
        return this.renderWebhooks(a, req, res, { problem: e.message }, 400);
      }
      throw e;
    }
    res.redirect(303, `${projectPath(projectId, 'webhooks')}?notice=resent`);
  }

  @Get('mcp')
  async mcpPage(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.renderMcp(await this.projectAccess.of(req, projectId, 'viewer'), req, res);
  }

  @Post('mcp')
  async addMcp(@Param('projectId') projectId: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const a = await this.projectAccess.of(req, projectId, 'developer');
    const headerValue = field(req, 'header_value');
    const tools = field(req, 'tools')
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    try {
      const added = await this.mcpServers.add(a.member.projectId, {
        url: field(req, 'url').trim(),
        name: field(req, 'name').trim() || undefined,
        header: headerValue ? { name: field(req, 'header_name').trim() || 'Authorization', value: headerValue } : null,
        tools: tools.length ? tools : null,
      });
      await a.audit('mcp.add', added.id, {
        name: added.name,
        url: added.url,
        tools: added.tools,
        header: !!headerValue,
      });
      await this.renderMcp(a, req, res, { added: added.name });
    } catch (e) {
      // A URL the service refuses is told by what is wrong with it, in the form's words.
      if (e instanceof AccountsError)
        return this.renderMcp(a, req, res, { problem: urlProblem(field(req, 'url').trim(), 'mcp') ?? e.message }, 400);
      throw e;
    }
  }

  /** Changes the tools a server allows (empty: every tool it lists). */
  @Post('mcp/:serverId/tools')
  async setMcpTools(
    @Param('projectId') projectId: string,
    @Param('serverId') serverId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.projectAccess.of(req, projectId, 'developer');
    if (!isUuid(serverId)) throw new NotFoundException();
    const tools = field(req, 'tools')
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    try {
      await this.mcpServers.setTools(a.member.projectId, serverId, tools.length ? tools : null);
      await a.audit('mcp.tools', serverId, { tools: tools.length ? tools : null });
    } catch (e) {
      if (e instanceof AccountsError) {
        if (e.message.includes('has no MCP server')) throw new NotFoundException();
        return this.renderMcp(a, req, res, { problem: e.message }, 400);
      }
      throw e;
    }
    res.redirect(303, `${projectPath(projectId, 'mcp')}?notice=mcp-tools`);
  }

  /** Asks before removing a server (the list links here; the form POSTs to the same path). */
  @Get('mcp/:serverId/remove')
  async confirmRemoveMcp(
    @Param('projectId') projectId: string,
    @Param('serverId') serverId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.projectAccess.of(req, projectId, 'developer');
    const server = isUuid(serverId)
      ? (await this.mcpServers.list(a.member.projectId)).find((s) => s.id === serverId)
      : undefined;
    if (!server) throw new NotFoundException();
    confirmPage(res, a, 'mcp', {
      title: 'Remove an MCP server',
      question: html`Remove the MCP server <strong>${server.name}</strong> (<code>${server.url}</code>)? Runs that start from then on no longer offer its tools, and its auth header is deleted.`,
      action: projectPath(projectId, `mcp/${server.id}/remove`),
      button: 'Remove the server',
      back: projectPath(projectId, 'mcp'),
      keep: 'Keep it',
    });
  }

  @Post('mcp/:serverId/remove')
  async removeMcp(
    @Param('projectId') projectId: string,
    @Param('serverId') serverId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const a = await this.projectAccess.of(req, projectId, 'developer');
    if (!isUuid(serverId)) throw new NotFoundException();
    try {
      await this.mcpServers.remove(a.member.projectId, serverId);
      await a.audit('mcp.remove', serverId);
    } catch (e) {
      if (e instanceof AccountsError) throw new NotFoundException();
      throw e;
    }
    res.redirect(303, `${projectPath(projectId, 'mcp')}?notice=mcp-removed`);
  }

  private async renderWebhooks(
    a: Access,
    req: Request,
    res: Response,
    outcome: { problem?: string; added?: { url: string; secret: string } } = {},
    statusCode = 200,
  ): Promise<void> {
    const projectId = a.member.projectId;
    const [endpoints, deliveries] = await Promise.all([
      this.webhooks.list(projectId),
      this.webhooks.deliveries(projectId, DELIVERIES_SHOWN),
    ]);
    const urls = new Map(endpoints.map((e) => [e.id, e.url]));
    const chosen = outcome.problem ? fields(req, 'events') : WEBHOOK_EVENTS;
    projectPage(
      res,
      a,
      'webhooks',
      'Webhooks',
      html`
${outcome.problem ? html`<p class="notice error" role="alert">${outcome.problem}</p>` : ''}
${
  outcome.added
    ? html`<div class="notice" role="status"><p><strong>Endpoint added</strong> for <code>${outcome.added.url}</code>. Its signing secret (Standard Webhooks) is shown this once: store it now.</p>
<p class="secret"><code id="webhook-secret" data-testid="webhook-secret">${outcome.added.secret}</code> <button type="button" class="secondary" data-copy="webhook-secret">Copy</button></p></div>`
    : ''
}
<h2>Endpoints</h2>
${
  endpoints.length
    ? html`<div class="table-wrap"><table><thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Added</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead><tbody>
${endpoints.map((e) => html`<tr><td><code>${e.url}</code></td><td>${e.events.length === WEBHOOK_EVENTS.length ? 'all' : e.events.join(', ')}</td><td>${when(e.createdAt)}</td><td><a href="${projectPath(projectId, `webhooks/${e.id}/remove`)}" aria-label="${`Remove the endpoint ${e.url}`}">Remove</a></td></tr>`)}
</tbody></table></div>`
    : html`<p class="muted">No endpoints: nothing is sent.</p>`
}
<h2>Add an endpoint</h2>
<form class="stack" method="post" action="${projectPath(projectId, 'webhooks')}">${csrfField(a.session.csrfToken)}
  <label>URL <input name="url" type="url" required placeholder="https://example.com/webhooks" value="${outcome.problem ? field(req, 'url') : ''}"></label>
  <fieldset><legend>Events</legend>
  ${WEBHOOK_EVENTS.map((e) => html`<label><span><input type="checkbox" name="events" value="${e}"${chosen.includes(e) ? html` checked` : ''}> ${e}</span></label>`)}
  </fieldset>
  <button type="submit">Add the endpoint</button>
</form>
<h2>Deliveries</h2>
${
  deliveries.length
    ? html`<p class="muted">The newest ${DELIVERIES_SHOWN}, with every attempt. Failed deliveries were retried for the configured time before they were given up; a delivered or failed one can be sent again.</p>
<div class="table-wrap"><table><thead><tr><th scope="col">Event</th><th scope="col">Endpoint</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead><tbody>
${deliveries.map((d) => {
  const url = urls.get(d.subscriptionId);
  return html`<tr data-testid="delivery"><td>${d.eventType}<div class="muted"><code>${d.id}</code>${d.resendOf ? html` (resends <code>${d.resendOf}</code>)` : ''}</div></td><td>${url ? html`<code>${url}</code>` : html`<span class="muted">removed</span>`}</td><td>${status(d.status)}</td>
<td>${
    d.attempts.length
      ? html`<ol class="attempts">${d.attempts.map((t) => html`<li>${when(t.attemptedAt)}: ${t.statusCode ?? 'no answer'}${t.error && t.error !== `answered ${t.statusCode}` ? html` <span class="muted">${t.error}</span>` : ''} <span class="muted">(${t.durationMs} ms)</span></li>`)}</ol>`
      : html`<span class="muted">none yet</span>`
  }</td><td>${when(d.createdAt)}</td>
<td>${d.status !== 'pending' && url ? html`<form method="post" action="${projectPath(projectId, `webhooks/deliveries/${d.id}/resend`)}">${csrfField(a.session.csrfToken)}<button class="secondary" type="submit" aria-label="${`Resend ${d.eventType} delivery ${d.id}`}">Resend</button></form>` : ''}</td></tr>`;
})}
</tbody></table></div>`
    : html`<p class="muted">No deliveries yet.</p>`
}`,
      statusCode,
    );
  }

  private async renderMcp(
    a: Access,
    req: Request,
    res: Response,
    outcome: { problem?: string; added?: string } = {},
    statusCode = 200,
  ): Promise<void> {
    const projectId = a.member.projectId;
    const servers = await this.mcpServers.list(projectId);
    const value = (name: string, fallback = ''): string => (outcome.problem ? field(req, name) : fallback);
    projectPage(
      res,
      a,
      'mcp',
      'MCP servers',
      html`
${outcome.problem ? html`<p class="notice error" role="alert">${outcome.problem}</p>` : ''}
${outcome.added ? html`<p class="notice" role="status">MCP server ${outcome.added} added: runs with the research capability offer its tools as <code>mcp_${outcome.added}_&lt;tool&gt;</code>.</p>` : ''}
<p>The tools of these servers (Streamable HTTP) are offered to runs with the research capability.</p>
${
  servers.length
    ? html`<div class="table-wrap"><table><thead><tr><th scope="col">Name</th><th scope="col">URL</th><th scope="col">Allowed tools</th><th scope="col">Auth header</th><th scope="col">Added</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead><tbody>
${servers.map(
  (
    s,
  ) => html`<tr><td>${s.name}</td><td><code>${s.url}</code></td><td><form class="inline" method="post" action="${projectPath(projectId, `mcp/${s.id}/tools`)}">${csrfField(a.session.csrfToken)}<input name="tools" size="16" aria-label="${`Allowed tools of ${s.name}`}" placeholder="every tool it lists" value="${s.tools?.join(', ') ?? ''}"><button class="secondary" type="submit" aria-label="${`Save the allowed tools of ${s.name}`}">Save</button></form></td><td>${s.headerName ? html`${s.headerName} <span class="muted">(set, never shown)</span>` : html`<span class="muted">none</span>`}</td><td>${when(s.createdAt)}</td>
<td><a href="${projectPath(projectId, `mcp/${s.id}/remove`)}" aria-label="${`Remove the MCP server ${s.name}`}">Remove</a></td></tr>`,
)}
</tbody></table></div>`
    : html`<p class="muted">No MCP servers.</p>`
}
<h2>Add a server</h2>
<form class="stack" method="post" action="${projectPath(projectId, 'mcp')}">${csrfField(a.session.csrfToken)}
  <label>URL <input name="url" type="url" required placeholder="https://mcp.example.com/mcp" value="${value('url')}"></label>
  <label>Name <span class="muted">(in tool names: a-z, 0-9, "-"; optional: made from the server's host name)</span> <input name="name" value="${value('name')}"></label>
  <label>Allowed tools <span class="muted">(comma-separated; empty: every tool the server lists; changed in the list above later)</span> <input name="tools" value="${value('tools')}"></label>
  <label>Auth header name <input name="header_name" value="${value('header_name', 'Authorization')}"></label>
  <label>Auth header value <span class="muted">(write-only: stored encrypted, never shown; optional)</span> <input name="header_value" type="password" autocomplete="off"></label>
  <button type="submit">Add the server</button>
</form>`,
      statusCode,
    );
  }
}
