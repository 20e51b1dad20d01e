import type { ConsoleMembership, ConsoleSession } from '#libs/accounts';
import { html, type Html } from './html.js';

export const PROJECT_SECTIONS = [
  ['overview', 'Overview'],
  ['keys', 'API keys'],
  ['model', 'Model'],
  ['plan', 'Plan'],
  ['requests', 'Requests'],
  ['sessions', 'Sessions'],
  ['webhooks', 'Webhooks'],
  ['mcp', 'MCP servers'],
  ['members', 'Members'],
  ['audit', 'Audit log'],
] as const;
/** Sections only owners open. */
const OWNER_SECTIONS: readonly string[] = ['audit'];
export type ProjectSection = (typeof PROJECT_SECTIONS)[number][0];

export interface PageContext {
  readonly title: string;
  readonly csrf: string;
  readonly session?: ConsoleSession;
  readonly project?: ConsoleMembership;
  readonly section?: ProjectSection;
}

/** The hidden field every form carries. */
export const csrfField = (csrf: string): Html => html`<input type="hidden" name="_csrf" value="${csrf}">`;

export const projectPath = (projectId: string, section: string = 'overview'): string =>
  `/projects/${projectId}/${section}`;

export const when = (d: Date | null | undefined): Html =>
  d
    ? html`<time datetime="${d.toISOString()}">${d.toISOString().replace('T', ' ').slice(0, 19)} UTC</time>`
    : html`<span class="muted">never</span>`;

export function page(ctx: PageContext, body: Html): Html {
  const { session, project } = ctx;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${ctx.title} · Managed agent console</title>
<link rel="stylesheet" href="/static/console.css">
<script src="/static/console.js" defer></script>
</head>
<body>
<header class="top">
  <a class="brand" href="/">Managed agent console</a>
  ${project ? html`<span>Project <strong>${project.projectName}</strong> <span class="muted">(${project.role})</span></span>` : ''}
  ${
    session
      ? html`<a href="/account">${session.email}</a>
  <form method="post" action="/sign-out">${csrfField(ctx.csrf)}<button class="secondary" type="submit">Sign out</button></form>`
      : ''
  }
</header>
${
  project
    ? html`<nav class="project" aria-label="Project">${PROJECT_SECTIONS.filter(([id]) => project.role === 'owner' || !OWNER_SECTIONS.includes(id)).map(([id, label]) => html`<a href="${projectPath(project.projectId, id)}"${ctx.section === id ? html` aria-current="page"` : ''}>${label}</a>`)}</nav>`
    : ''
}
<main>
<h1>${ctx.title}</h1>
${body}
</main>
</body>
</html>`;
}
