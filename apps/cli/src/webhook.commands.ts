import { InvalidArgumentError, type Command, type Option } from 'commander';
import type { AccountsService } from '#libs/accounts';
import { WEBHOOK_EVENTS } from '#libs/contracts';
import type { WebhookDelivery, WebhookStore, WebhookSubscription } from '#libs/webhooks';

/** What the webhook commands use of the CLI around them. */
export interface WebhookCommandContext {
  readonly accounts: () => Promise<AccountsService>;
  readonly webhooks: () => Promise<WebhookStore>;
  readonly print: (json: boolean, value: unknown, text: string) => void;
  readonly jsonOption: Option;
}

const subscriptionView = (s: WebhookSubscription) => ({
  id: s.id,
  project_id: s.projectId,
  url: s.url,
  events: s.events,
  created_at: s.createdAt.toISOString(),
});

const deliveryView = (d: WebhookDelivery) => ({
  id: d.id,
  workflow_id: `webhook-${d.id}`,
  webhook_id: d.subscriptionId,
  event_id: d.eventId,
  event: d.eventType,
  status: d.status,
  created_at: d.createdAt.toISOString(),
  finished_at: d.finishedAt?.toISOString() ?? null,
  attempts: d.attempts.map((a) => ({
    attempt: a.attempt,
    attempted_at: a.attemptedAt.toISOString(),
    status_code: a.statusCode,
    error: a.error,
    duration_ms: a.durationMs,
  })),
});

function parseList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function deliveryText(d: WebhookDelivery): string {
  const head = `${d.id}  ${d.eventType}  ${d.status}  ${d.createdAt.toISOString()}  (webhook ${d.subscriptionId}, event ${d.eventId})`;
  const attempts = d.attempts.map(
    (a) =>
      `  attempt ${a.attempt}  ${a.attemptedAt.toISOString()}  ${a.statusCode ?? '-'}  ${a.durationMs} ms${a.error ? `  ${a.error}` : ''}`,
  );
  return [head, ...attempts].join('\n');
}

/** `webhook add|list|remove|deliveries`: a project's webhook endpoints and what was sent to them. */
export function addWebhookCommands(program: Command, ctx: WebhookCommandContext): void {
  const { accounts, webhooks, print, jsonOption } = ctx;
  const webhook = program
    .command('webhook')
    .description('webhook endpoints of a project (Standard Webhooks signatures) and their deliveries');
  webhook
    .command('add')
    .description('add an endpoint; its whsec_ signing secret is printed once and stored encrypted')
    .argument('<project>', 'project id or name')
    .requiredOption(
      '--url <url>',
      'where to POST the events (public addresses only, unless WEBHOOK_ALLOW_HOSTS allows more)',
    )
    .option('--events <list>', `comma-separated events (default: all of ${WEBHOOK_EVENTS.join(', ')})`, parseList)
    .addOption(jsonOption)
    .action(async (ref: string, o: { url: string; events?: string[]; json?: boolean }) => {
      const project = await (await accounts()).findProject(ref);
      const { subscription, secret } = await (await webhooks()).add(project.id, { url: o.url, events: o.events });
      print(
        !!o.json,
        { ...subscriptionView(subscription), secret },
        `${secret}\n(webhook ${subscription.id} for ${subscription.url}: ${subscription.events.join(', ')}; the signing secret is shown once: store it now)`,
      );
    });
  webhook
    .command('list')
    .description("list a project's endpoints (never their secrets)")
    .argument('<project>', 'project id or name')
    .addOption(jsonOption)
    .action(async (ref: string, o: { json?: boolean }) => {
      const project = await (await accounts()).findProject(ref);
      const all = await (await webhooks()).list(project.id);
      print(
        !!o.json,
        all.map(subscriptionView),
        all.map((s) => `${s.id}  ${s.url}  [${s.events.join(',')}]`).join('\n') || 'no webhooks',
      );
    });
  webhook
    .command('remove')
    .description('remove an endpoint: nothing more is sent to it, retries included; its deliveries stay listed')
    .argument('<project>', 'project id or name')
    .argument('<webhook-id>', 'the endpoint id (from webhook list)')
    .addOption(jsonOption)
    .action(async (ref: string, id: string, o: { json?: boolean }) => {
      const project = await (await accounts()).findProject(ref);
      const removed = await (await webhooks()).remove(project.id, id);
      print(!!o.json, subscriptionView(removed), `removed webhook ${removed.id} (${removed.url})`);
    });
  webhook
    .command('deliveries')
    .description(
      "a project's latest deliveries, newest first, with every attempt (workflow webhook-<delivery id> in the Temporal UI)",
    )
    .argument('<project>', 'project id or name')
    .option('--limit <n>', 'deliveries to show (default 50)', (v: string) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n <= 0 || n > 1000)
        throw new InvalidArgumentError(`"${v}" is not an integer from 1 to 1000`);
      return n;
    })
    .addOption(jsonOption)
    .action(async (ref: string, o: { limit?: number; json?: boolean }) => {
      const project = await (await accounts()).findProject(ref);
      const all = await (await webhooks()).deliveries(project.id, o.limit ?? 50);
      print(!!o.json, all.map(deliveryView), all.map(deliveryText).join('\n') || 'no deliveries');
    });
}
