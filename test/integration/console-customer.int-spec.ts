import { randomInt, randomUUID } from 'node:crypto';
import { jest } from '@jest/globals';
import { Argon2idHasher, ConsoleAccountsService, McpServersService } from '#libs/accounts';
import { WebhookStore } from '#libs/webhooks';
import { operatorCli } from '../support/cli.js';
import { ConsoleClient, linkIn } from '../support/console-client.js';
import { startConsole, type RunningConsole } from '../support/console.js';
import { testConfig } from '../support/config.js';
import { Fixtures } from '../support/fixtures.js';

// The customer console over plain HTTP against the real PostgreSQL (issue 48, "the console a
// customer would choose"): the deep link kept through sign-in, confirmation pages before every
// removal, a key issued once however often its page is reloaded, the password changed by its
// user, requests paged without skipping rows that share a timestamp, errors in the customer's words.
jest.setTimeout(120_000);

const config = testConfig();

describe('the customer console over HTTP', () => {
  let fixtures: Fixtures;
  let consoleApp: RunningConsole;
  let consoleAccounts: ConsoleAccountsService;
  let projectId: string;
  let owner: ConsoleClient;
  const ownerEmail = `owner-${randomUUID()}@example.com`;
  const ownerPassword = `first password ${randomUUID()}`;
  const address = (): string => `198.19.${randomInt(256)}.${randomInt(1, 255)}`;

  const cli = (...argv: string[]): Promise<string> => operatorCli(config, ...argv);

  async function member(email: string, password: string, role = 'owner'): Promise<ConsoleClient> {
    const link = linkIn(await cli('console', 'invite', projectId, email, '--role', role))!;
    const client = new ConsoleClient(consoleApp.url, { 'x-forwarded-for': address() });
    expect((await client.setPassword(link, password)).status).toBe(303);
    expect((await client.signIn(email, password)).status).toBe(303);
    return client;
  }

  const page = (section: string): string => `/projects/${projectId}/${section}`;

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    consoleApp = await startConsole({ CONSOLE_TRUSTED_PROXY_HOPS: '1', WEBHOOK_ALLOW_HOSTS: undefined });
    consoleAccounts = new ConsoleAccountsService(fixtures.db, config, fixtures.accounts, new Argon2idHasher());
    projectId = (await fixtures.project()).project.id;
    owner = await member(ownerEmail, ownerPassword);
  });

  afterAll(async () => {
    await consoleApp?.close();
    await fixtures?.close();
  });

  it("opens a project's page asked for while signed out once the user signs in", async () => {
    const client = new ConsoleClient(consoleApp.url, { 'x-forwarded-for': address() });
    const asked = await client.get(`${page('requests')}?status=failed`);
    expect(asked.status).toBe(303);
    const signInPage = await client.get(asked.location!);
    const next = /name="next" value="([^"]+)"/.exec(signInPage.text)?.[1];
    expect(next?.replaceAll('&amp;', '&')).toBe(`${page('requests')}?status=failed`);
    const signedIn = await client.post('/sign-in', { email: ownerEmail, password: ownerPassword, next: next! });
    expect(signedIn.location).toBe(`${page('requests')}?status=failed`);
  });

  it('issues a key once: the POST redirects, the key is shown on the next page only, a reload issues nothing', async () => {
    const before = (await fixtures.accounts.listApiKeys(projectId)).length;
    const issued = await owner.post(page('keys'), { label: 'once only' });
    expect(issued.status).toBe(303);
    expect(issued.location).toBe(page('keys'));
    const shown = await owner.get(issued.location!);
    const key = /data-testid="new-key">([^<]+)</.exec(shown.text)?.[1];
    expect(key).toMatch(/^sk-mas_/);
    // A reload shows it no more, and issues nothing.
    const reloaded = await owner.get(issued.location!);
    expect(reloaded.text).not.toContain(key);
    expect(reloaded.text).not.toContain('data-testid="new-key"');
    expect((await fixtures.accounts.listApiKeys(projectId)).length).toBe(before + 1);
    // Another session of the same user does not see it either.
    const other = new ConsoleClient(consoleApp.url, { 'x-forwarded-for': address() });
    expect((await other.signIn(ownerEmail, ownerPassword)).status).toBe(303);
    await owner.post(page('keys'), { label: 'second' });
    expect((await other.get(page('keys'))).text).not.toContain('data-testid="new-key"');
    expect((await owner.get(page('keys'))).text).toContain('data-testid="new-key"');
  });

  it('adds a webhook endpoint once: its secret is shown on the page the POST redirects to, and a reload adds nothing', async () => {
    const before = (await new WebhookStore(fixtures.db, config).list(projectId)).length;
    const added = await owner.post(page('webhooks'), {
      url: 'https://once.example.com/hook',
      events: 'agent.completed',
    });
    expect(added.status).toBe(303);
    expect(added.location).toBe(page('webhooks'));
    const shown = await owner.get(added.location!);
    const secret = /data-testid="webhook-secret">([^<]+)</.exec(shown.text)?.[1];
    expect(secret).toMatch(/^whsec_/);
    expect(shown.text).toContain('https://once.example.com/hook');
    const reloaded = await owner.get(added.location!);
    expect(reloaded.text).not.toContain(secret);
    expect((await new WebhookStore(fixtures.db, config).list(projectId)).length).toBe(before + 1);
  });

  it('asks before removing an MCP server, a webhook endpoint or a member: the list links to a confirmation page', async () => {
    const mcp = await new McpServersService(fixtures.db, config, fixtures.accounts).add(projectId, {
      url: 'https://mcp.example.com/mcp',
      name: 'confirm-me',
    });
    const list = await owner.get(page('mcp'));
    expect(list.text).not.toContain(`action="${page(`mcp/${mcp.id}/remove`)}"`);
    expect(list.text).toContain(`href="${page(`mcp/${mcp.id}/remove`)}"`);
    const confirm = await owner.get(page(`mcp/${mcp.id}/remove`));
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain(`action="${page(`mcp/${mcp.id}/remove`)}"`);
    expect(confirm.text).toContain('confirm-me');
    expect((await owner.post(page(`mcp/${mcp.id}/remove`))).status).toBe(303);

    const hook = (await new WebhookStore(fixtures.db, config).add(projectId, { url: 'https://hooks.example.com/in' }))
      .subscription;
    expect((await owner.get(page('webhooks'))).text).not.toContain(`action="${page(`webhooks/${hook.id}/remove`)}"`);
    const confirmHook = await owner.get(page(`webhooks/${hook.id}/remove`));
    expect(confirmHook.status).toBe(200);
    expect(confirmHook.text).toContain(`action="${page(`webhooks/${hook.id}/remove`)}"`);
    expect((await owner.post(page(`webhooks/${hook.id}/remove`))).status).toBe(303);

    const other = `other-${randomUUID()}@example.com`;
    await member(other, `pw ${randomUUID()}`, 'viewer');
    const userId = (
      (await fixtures.db.query(`select id from console_users where email = $1`, [other])) as { id: string }[]
    )[0]!.id;
    const members = await owner.get(page('members'));
    expect(members.text).not.toContain(`action="${page(`members/${userId}/remove`)}"`);
    const confirmMember = await owner.get(page(`members/${userId}/remove`));
    expect(confirmMember.status).toBe(200);
    expect(confirmMember.text).toContain(other);
    expect(confirmMember.text).toContain(`action="${page(`members/${userId}/remove`)}"`);
  });

  it('changes the password of the signed-in user: the current one checked and throttled, other sessions ended, reset links cleared', async () => {
    const email = `changer-${randomUUID()}@example.com`;
    const first = `the first one ${randomUUID()}`;
    const second = `the second one ${randomUUID()}`;
    const me = await member(email, first, 'viewer');
    const elsewhere = new ConsoleClient(consoleApp.url, { 'x-forwarded-for': address() });
    expect((await elsewhere.signIn(email, first)).status).toBe(303);
    const reset = (await consoleAccounts.passwordResetLink(email)).link!;

    const account = await me.get('/account');
    expect(account.text).toContain('action="/account/password"');
    const counted = async (): Promise<number> =>
      (
        (await fixtures.db.query(`select attempts from console_signin_counters where scope = $1`, [
          `email:${email}`,
        ])) as { attempts: number }[]
      )[0]?.attempts ?? 0;
    const before = await counted();
    const wrong = await me.post('/account/password', { current: 'not my password', password: second, confirm: second });
    expect(wrong.status).toBe(400);
    expect(wrong.text).toContain('current password is wrong');
    // The same throttle as signing in counted the attempt.
    expect(await counted()).toBe(before + 1);
    const differ = await me.post('/account/password', { current: first, password: second, confirm: `${second}x` });
    expect(differ.status).toBe(400);

    const changed = await me.post('/account/password', { current: first, password: second, confirm: second });
    expect(changed.status).toBe(303);
    // In the audit log of the project the user is a member of, with no secret in it.
    const [entry] = (await fixtures.db.query(
      `select actor, detail from audit_log where project_id = $1 and action = 'account.password'`,
      [projectId],
    )) as { actor: string; detail: Record<string, unknown> }[];
    expect(entry).toEqual({ actor: `user:${email}`, detail: {} });
    expect((await me.get('/account')).status).toBe(200);
    expect((await elsewhere.get('/account')).status).toBe(303);
    expect((await me.get(new URL(reset).pathname)).status).toBe(404);
    const fresh = new ConsoleClient(consoleApp.url, { 'x-forwarded-for': address() });
    expect((await fresh.signIn(email, first)).status).toBe(401);
    expect((await fresh.signIn(email, second)).status).toBe(303);
  });

  it('pages the requests without skipping or repeating rows that share a timestamp across a page boundary', async () => {
    const paged = (await fixtures.project()).project.id;
    const email = `pager-${randomUUID()}@example.com`;
    const pw = `pager ${randomUUID()}`;
    const link = linkIn(await cli('console', 'invite', paged, email, '--role', 'viewer'))!;
    const client = new ConsoleClient(consoleApp.url, { 'x-forwarded-for': address() });
    await client.setPassword(link, pw);
    await client.signIn(email, pw);
    // 45 requests a second apart, then 12 in one microsecond (older): the 50-row page ends among them.
    const ids: string[] = [];
    for (let i = 0; i < 57; i++) {
      const id = randomUUID();
      ids.push(id);
      const at = i < 45 ? `2026-01-02T00:00:${String(59 - i).padStart(2, '0')}.000000Z` : '2026-01-01T12:00:00.123456Z';
      await fixtures.db.query(
        `insert into request_log (request_id, project_id, status, created_at, updated_at) values ($1, $2, 'completed', $3, $3)`,
        [id, paged, at],
      );
    }
    const seen: string[] = [];
    let next: string | null = `/projects/${paged}/requests`;
    for (let pages = 0; next && pages < 5; pages++) {
      const answer = await client.get(next);
      expect(answer.status).toBe(200);
      seen.push(...[...answer.text.matchAll(/href="\/projects\/[^/]+\/requests\/([0-9a-f-]{36})"/g)].map((m) => m[1]!));
      const older = /<a href="([^"]+)">Older requests<\/a>/.exec(answer.text)?.[1];
      next = older ? older.replaceAll('&amp;', '&') : null;
    }
    expect(seen).toHaveLength(ids.length);
    expect(new Set(seen)).toEqual(new Set(ids));
  });

  it("shows refusals and help in the customer's words, not the operator's", async () => {
    const webhook = await owner.post(page('webhooks'), { url: 'http://10.1.2.3/hook', events: 'agent.completed' });
    expect(webhook.status).toBe(400);
    expect(webhook.text).not.toContain('WEBHOOK_ALLOW_HOSTS');
    expect(webhook.text).toContain('public');

    const mcp = await owner.post(page('mcp'), { url: 'https://user:secret@mcp.example.com/mcp', name: 'creds' });
    expect(mcp.status).toBe(400);
    expect(mcp.text).not.toContain('--header');
    expect(mcp.text).toContain('Auth header');

    const model = await owner.get(page('model'));
    expect(model.text).not.toMatch(/--(region|base-url|resource|model|api-version)/);
    const bedrock = await owner.post(page('model'), { provider: 'bedrock', model: 'anthropic.claude', api_key: 'k' });
    expect(bedrock.status).toBe(400);
    expect(bedrock.text).not.toContain('--region');
    expect(bedrock.text).toContain('Region');
    const azure = await owner.post(page('model'), { provider: 'azure-openai', model: 'deployment', api_key: 'k' });
    expect(azure.status).toBe(400);
    expect(azure.text).not.toContain('--resource');
  });

  it('renders every time as a <time> with its ISO instant, for the browser to show in its own zone', async () => {
    const keys = await owner.get(page('keys'));
    expect(keys.text).toMatch(/<time datetime="\d{4}-\d\d-\d\dT[\d:.]+Z">[^<]+ UTC<\/time>/);
    const js = await owner.get('/static/console.js');
    expect(js.text).toContain('time[datetime]');
  });
});
