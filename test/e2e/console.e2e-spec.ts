import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { Argon2idHasher, ConsoleAccountsService, McpServersService } from '#libs/accounts';
import { FileStore } from '#libs/persistence';
import { WebhookStore } from '#libs/webhooks';
import { runCli } from '../../apps/cli/src/cli.js';
import { startConsole, type RunningConsole } from '../support/console.js';
import { freePort } from '../support/dev-temporal.js';
import { e2eStack } from '../support/e2e-stack.js';
import { eventually } from '../support/eventually.js';
import { request } from '../support/http.js';

// The customer console (docs/console.md) in Debian's Chromium driven by Playwright, as the Temporal
// UI test drives it, over the real stack: the api, a worker and the projector of this file's own.
// Screenshots go to a temporary directory, or to docs/console when MAS_CONSOLE_SCREENSHOTS names it.
const CHROMIUM = '/usr/bin/chromium';
const PHONE_WIDTH = 390;

// axe-core goes into the page as an inline script, which the console's Content-Security-Policy
// refuses: the browser contexts bypass the CSP (the console itself never needs it bypassed).
jest.setTimeout(90_000);

/** A webhook receiver on loopback that accepts everything and keeps what it got. */
async function startReceiver(): Promise<{
  url: string;
  received: { headers: IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}> {
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('the customer console', () => {
  // Webhooks to the loopback receiver, retried quickly (WEBHOOK_ALLOW_HOSTS is for every app: the
  // console checks the URL with the same store).
  const stack = e2eStack({
    name: 'console',
    pipeline: true,
    env: {
      WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      WEBHOOK_RETRY_INITIAL_INTERVAL_MS: '100',
      WEBHOOK_RETRY_MAXIMUM_INTERVAL_MS: '300',
      WEBHOOK_RETRY_FOR_MS: '8000',
    },
  });
  const shots = process.env['MAS_CONSOLE_SCREENSHOTS'] ?? mkdtempSync(join(tmpdir(), 'mas-console-'));
  let consoleApp: RunningConsole;
  /** The console's /metrics listener (CONSOLE_METRICS_PORT), apart from its public port. */
  let metricsPort: number;
  let browser: Browser;
  let consoleAccounts: ConsoleAccountsService;
  let projectA: string;
  let projectB: string;
  let keyOfB: string;
  const owner = `owner-${randomUUID()}@example.com`;
  const password = `correct horse ${randomUUID()}`;
  let ownerContext: BrowserContext;
  let ownerPage: Page;
  let apiKey: string;
  /** Things of project B that a member of A tries to reach by URL and by POST. */
  const ofB = { webhook: '', delivery: '', mcp: '', file: '', session: '' };
  let authOfB: { authorization: string };

  const path = (link: string): string => new URL(link).pathname;
  const cli = async (...argv: string[]): Promise<string> => {
    let out = '';
    const code = await runCli(argv, stack.config, {
      out: (s) => (out += s),
      err: (s) => (out += s),
      readStdin: async () => '',
      env: {},
    });
    expect(code).toBe(0);
    return out;
  };

  /** Opens a one-time link, sets the password and signs in: the page ends on the user's first project. */
  async function acceptAndSignIn(page: Page, link: string, email: string): Promise<void> {
    await page.goto(`${consoleApp.url}${path(link)}`);
    await page.getByLabel('New password').fill(password);
    await page.getByLabel('The same again').fill(password);
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.getByText('Password set. Sign in with it.').waitFor();
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
  }

  /** axe-core's serious and critical findings on the page (an empty list passes). */
  async function seriousViolations(page: Page): Promise<string[]> {
    await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core') });
    const found = await page.evaluate(async () => {
      const axe = (
        globalThis as unknown as {
          axe: {
            run(): Promise<{ violations: { id: string; impact: string | null; nodes: { target: unknown[] }[] }[] }>;
          };
        }
      ).axe;
      return (await axe.run()).violations.map((v) => ({
        id: v.id,
        impact: v.impact,
        targets: v.nodes.map((n) => String(n.target[0])),
      }));
    });
    return found
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.targets.join(', ')}`);
  }

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(
        `${CHROMIUM} is missing: install Debian's chromium package (npm test does, as root: scripts/browser.sh)`,
      );
    mkdirSync(shots, { recursive: true });
    metricsPort = await freePort();
    consoleApp = await startConsole({ ...stack.env, CONSOLE_METRICS_PORT: String(metricsPort) });
    consoleAccounts = new ConsoleAccountsService(
      stack.fixtures.db,
      stack.config,
      stack.fixtures.accounts,
      new Argon2idHasher(),
    );
    // Failed sign-ins from loopback are counted per address for 15 minutes: earlier runs on this
    // database must not slow this one's.
    await stack.fixtures.db.query(`delete from console_signin_counters where scope like 'address:%'`);
    projectA = (await stack.fixtures.project({ model: null, credits: 50 })).project.id;
    const b = await stack.fixtures.project();
    projectB = b.project.id;
    keyOfB = (await stack.fixtures.accounts.listApiKeys(projectB))[0]!.id;
    authOfB = b.auth;
    const webhooksOfB = new WebhookStore(stack.fixtures.db, stack.config);
    ofB.webhook = (await webhooksOfB.add(projectB, { url: 'https://b.example.com/hook' })).subscription.id;
    const [deliveryOfB] = await webhooksOfB.createDeliveries(
      { id: randomUUID(), type: 'agent.completed', projectId: projectB },
      [ofB.webhook],
      '{"type":"agent.completed"}',
    );
    await webhooksOfB.markFailed(deliveryOfB!.id);
    ofB.delivery = deliveryOfB!.id;
    ofB.mcp = (
      await new McpServersService(stack.fixtures.db, stack.config, stack.fixtures.accounts).add(projectB, {
        url: 'https://mcp.b.example.com/mcp',
        name: 'b-tools',
      })
    ).id;
    ofB.file = await new FileStore(stack.fixtures.db).put(projectB, randomUUID(), {
      name: 'secret-of-b.txt',
      mediaType: 'text/plain',
      encoding: 'utf8',
      content: 'B only',
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    ownerContext = await browser.newContext({ viewport: { width: 1100, height: 800 }, bypassCSP: true });
    ownerPage = await ownerContext.newPage();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await consoleApp?.close();
  });

  it('an owner invited by the operator sets a password, signs in and issues a key that the api takes', async () => {
    const out = await cli('console', 'invite', projectA, owner, '--role', 'owner');
    const link = /http\S+\/invite\/\S+/.exec(out)?.[0];
    expect(link).toBeDefined();
    await acceptAndSignIn(ownerPage, link!, owner);
    // The link is used up.
    const again = await ownerPage.request.get(`${consoleApp.url}${path(link!)}`);
    expect(again.status()).toBe(404);

    await ownerPage.getByRole('link', { name: 'API keys' }).click();
    await ownerPage.getByLabel('Label').fill('browser test');
    await ownerPage.getByRole('button', { name: 'Issue a key' }).click();
    apiKey = (await ownerPage.getByTestId('new-key').textContent())!.trim();
    expect(apiKey).toMatch(/^sk-mas_/);
    await ownerPage.screenshot({ path: join(shots, 'keys.png') });
    // The POST redirected: a reload shows the key no more and issues no second one.
    expect(ownerPage.url()).toBe(`${consoleApp.url}/projects/${projectA}/keys`);
    const issued = (await stack.fixtures.accounts.listApiKeys(projectA)).length;
    await ownerPage.reload();
    expect(await ownerPage.getByTestId('new-key').count()).toBe(0);
    expect((await stack.fixtures.accounts.listApiKeys(projectA)).length).toBe(issued);
    // Shown once: the list shows the prefix only.
    await ownerPage.getByRole('link', { name: 'API keys' }).click();
    expect(await ownerPage.content()).not.toContain(apiKey);
    expect(await seriousViolations(ownerPage)).toEqual([]);
  });

  it('sets the model with a write-only key and sends a test request: the answer, then the error', async () => {
    const modelKey = `model-key-${randomUUID()}`;
    await ownerPage.getByRole('link', { name: 'Model' }).click();
    await ownerPage.getByLabel('Provider').selectOption('openai');
    await ownerPage.getByLabel('Model', { exact: true }).fill('test-model');
    await ownerPage.getByLabel('Base URL').fill(stack.models.url);
    await ownerPage.getByLabel('API key').fill(modelKey);
    await ownerPage.getByRole('button', { name: 'Save' }).click();
    await ownerPage.getByText('Model configuration saved.').waitFor();
    expect(await ownerPage.content()).not.toContain(modelKey);

    stack.models.requireKey(modelKey);
    stack.models.reply({ content: 'Hello from the scripted model.' });
    await ownerPage.getByRole('button', { name: 'Send a test request' }).click();
    await expect(ownerPage.getByTestId('test-answer').textContent()).resolves.toContain(
      'Hello from the scripted model.',
    );
    await ownerPage.screenshot({ path: join(shots, 'model.png'), fullPage: true });
    expect(await seriousViolations(ownerPage)).toEqual([]);

    stack.models.reply({ status: 400, errorMessage: 'The model test-model does not exist.' });
    await ownerPage.getByRole('button', { name: 'Send a test request' }).click();
    // The provider's failure in the service's words, never its body (DESIGN.md section 11).
    const testError = await ownerPage.getByTestId('test-error').textContent();
    expect(testError).toContain('model provider openai rejected the request (HTTP 400)');
    expect(testError).not.toContain('does not exist');
    stack.models.requireKey(undefined);
  });

  it('shows the request in the list and its timeline; a revoked key is refused by the api', async () => {
    stack.models.reply({ content: 'Console says hi.' });
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: { authorization: `Bearer ${apiKey}` },
      body: { message: 'Hello' },
    });
    expect(res.body).toMatchObject({ status: 'completed', message: 'Console says hi.' });
    const id = res.body.id as string;

    // The list reads the request-log read model, which the projector fills from Kafka.
    await ownerPage.getByRole('link', { name: 'Requests' }).click();
    await eventually(async () => {
      await ownerPage.reload();
      expect(await ownerPage.getByRole('link', { name: `${id.slice(0, 8)}…` }).count()).toBe(1);
    });
    await ownerPage.getByLabel('Status').selectOption('failed');
    await ownerPage.getByRole('button', { name: 'Filter' }).click();
    expect(await ownerPage.getByRole('link', { name: `${id.slice(0, 8)}…` }).count()).toBe(0);
    await ownerPage.getByLabel('Status').selectOption('completed');
    await ownerPage.getByRole('button', { name: 'Filter' }).click();
    await ownerPage.getByRole('link', { name: `${id.slice(0, 8)}…` }).click();
    await ownerPage.getByRole('heading', { name: `Request ${id}` }).waitFor();
    const timeline = (await ownerPage.locator('ol.timeline').textContent())!;
    expect(timeline).toContain('accepted');
    expect(timeline).toContain('completed');
    await expect(ownerPage.locator('pre').textContent()).resolves.toBe('Console says hi.');
    await ownerPage.screenshot({ path: join(shots, 'request.png'), fullPage: true });
    expect(await seriousViolations(ownerPage)).toEqual([]);

    await ownerPage.getByRole('link', { name: 'Overview' }).click();
    await expect(ownerPage.getByTestId('requests-used').textContent()).resolves.toMatch(/^1 /);
    expect(await ownerPage.locator('figure.chart svg').count()).toBe(1);
    await ownerPage.screenshot({ path: join(shots, 'overview.png'), fullPage: true });
    expect(await seriousViolations(ownerPage)).toEqual([]);

    // At a phone's width nothing runs off the side.
    const phone = await ownerContext.newPage();
    await phone.setViewportSize({ width: PHONE_WIDTH, height: 844 });
    await phone.goto(`${consoleApp.url}/projects/${projectA}/overview`);
    expect(Number(await phone.evaluate('document.documentElement.scrollWidth'))).toBeLessThanOrEqual(PHONE_WIDTH);
    await phone.screenshot({ path: join(shots, 'overview-phone.png'), fullPage: true });
    await phone.goto(`${consoleApp.url}/projects/${projectA}/requests`);
    expect(Number(await phone.evaluate('document.documentElement.scrollWidth'))).toBeLessThanOrEqual(PHONE_WIDTH);
    await phone.close();

    await ownerPage.getByRole('link', { name: 'API keys' }).click();
    const row = ownerPage.getByRole('row').filter({ hasText: 'browser test' });
    expect(await row.textContent()).not.toContain('never');
    await row.getByRole('link', { name: /^Revoke/ }).click();
    await ownerPage.getByRole('button', { name: 'Revoke the key' }).click();
    await ownerPage.getByText('The key is revoked').waitFor();
    // Within the second a cached key is allowed (DESIGN.md section 10).
    await eventually(
      async () =>
        expect(
          (
            await request(stack.api.url, 'POST', '/v1/agent', {
              headers: { authorization: `Bearer ${apiKey}` },
              body: { message: 'Hello again' },
            })
          ).status,
        ).toBe(401),
      5000,
    );
  });

  it('webhooks: adds an endpoint, shows a delivery with its attempts, resends it, and removes the endpoint', async () => {
    const receiver = await startReceiver();
    try {
      await ownerPage.getByRole('link', { name: 'Webhooks' }).click();
      await ownerPage.getByRole('heading', { name: 'Webhooks' }).waitFor();
      await ownerPage.getByLabel('URL', { exact: true }).fill(receiver.url);
      // Only the completion: unchecking the others.
      for (const event of [
        'agent.requires_tool_outputs',
        'agent.failed',
        'agent.expired',
        'agent.cancelled',
        'session.expired',
        'session.ended',
      ])
        await ownerPage.getByLabel(event).uncheck();
      await ownerPage.getByRole('button', { name: 'Add the endpoint' }).click();
      const secret = (await ownerPage.getByTestId('webhook-secret').textContent())!.trim();
      expect(secret).toMatch(/^whsec_/);
      const [endpoint] = await new WebhookStore(stack.fixtures.db, stack.config).list(projectA);
      expect(endpoint).toMatchObject({ url: receiver.url, events: ['agent.completed'] });
      await ownerPage.getByRole('link', { name: 'Webhooks' }).click();
      expect(await ownerPage.content()).not.toContain(secret);

      const { key } = await stack.fixtures.accounts.createApiKey(projectA, 'webhooks test');
      stack.models.reply({ content: 'Hooked.' });
      const res = await request(stack.api.url, 'POST', '/v1/agent', {
        headers: { authorization: `Bearer ${key}` },
        body: { message: 'Hello hook' },
      });
      expect(res.body).toMatchObject({ status: 'completed' });
      const delivered = ownerPage
        .getByTestId('delivery')
        .filter({ hasText: 'agent.completed' })
        .filter({ hasText: 'delivered' });
      await eventually(async () => {
        await ownerPage.reload();
        expect(await delivered.count()).toBe(1);
      });
      expect(await delivered.first().textContent()).toMatch(/204/);
      expect(receiver.received).toHaveLength(1);
      const first = receiver.received[0]!;
      expect(JSON.parse(first.body)).toMatchObject({ type: 'agent.completed', data: { id: res.body.id } });
      await ownerPage.screenshot({ path: join(shots, 'webhooks.png'), fullPage: true });
      expect(await seriousViolations(ownerPage)).toEqual([]);

      // Resend: a new delivery of the same body under its own id, started by the worker's dispatcher.
      await delivered
        .first()
        .getByRole('button', { name: /^Resend/ })
        .click();
      await ownerPage.getByText('The delivery is queued to be sent again').waitFor();
      await eventually(async () => {
        await ownerPage.reload();
        expect(await delivered.count()).toBe(2);
      });
      expect(await delivered.first().textContent()).toContain('resends');
      expect(receiver.received).toHaveLength(2);
      const second = receiver.received[1]!;
      expect(second.body).toBe(first.body);
      expect(second.headers['webhook-id']).not.toBe(first.headers['webhook-id']);

      const phone = await ownerContext.newPage();
      await phone.setViewportSize({ width: PHONE_WIDTH, height: 844 });
      await phone.goto(`${consoleApp.url}/projects/${projectA}/webhooks`);
      expect(Number(await phone.evaluate('document.documentElement.scrollWidth'))).toBeLessThanOrEqual(PHONE_WIDTH);
      await phone.screenshot({ path: join(shots, 'webhooks-phone.png'), fullPage: true });
      await phone.close();

      // Removing asks first, on a page of its own.
      await ownerPage.getByRole('link', { name: `Remove the endpoint ${receiver.url}` }).click();
      await ownerPage.getByRole('heading', { name: 'Remove a webhook endpoint' }).waitFor();
      expect(await new WebhookStore(stack.fixtures.db, stack.config).list(projectA)).toHaveLength(1);
      await ownerPage.getByRole('button', { name: 'Remove the endpoint' }).click();
      await ownerPage.getByText('The endpoint is removed').waitFor();
      expect(await new WebhookStore(stack.fixtures.db, stack.config).list(projectA)).toEqual([]);
      // Its deliveries stay listed, with nowhere to resend them.
      expect(await delivered.count()).toBe(2);
      expect(await ownerPage.getByRole('button', { name: /^Resend/ }).count()).toBe(0);
    } finally {
      await receiver.close();
    }
  });

  it('MCP servers: adds one with allowed tools and a write-only header, lists it, removes it', async () => {
    const headerValue = `Bearer mcp-${randomUUID()}`;
    await ownerPage.getByRole('link', { name: 'MCP servers' }).click();
    await ownerPage.getByLabel('URL', { exact: true }).fill('https://mcp.example.com/mcp');
    await ownerPage.getByRole('textbox', { name: /^Name/ }).fill('docs');
    await ownerPage.getByLabel('Allowed tools').fill('search, fetch_page');
    await ownerPage.getByLabel('Auth header value').fill(headerValue);
    await ownerPage.getByRole('button', { name: 'Add the server' }).click();
    await ownerPage.getByText('MCP server docs added').waitFor();
    expect(await ownerPage.content()).not.toContain(headerValue);
    const [server] = await new McpServersService(stack.fixtures.db, stack.config, stack.fixtures.accounts).list(
      projectA,
    );
    expect(server).toMatchObject({
      name: 'docs',
      url: 'https://mcp.example.com/mcp',
      tools: ['search', 'fetch_page'],
      headerName: 'Authorization',
    });
    expect(await ownerPage.getByRole('textbox', { name: 'Allowed tools of docs' }).inputValue()).toBe(
      'search, fetch_page',
    );
    await ownerPage.screenshot({ path: join(shots, 'mcp.png'), fullPage: true });
    expect(await seriousViolations(ownerPage)).toEqual([]);

    // A second server with the same name is refused, and the form keeps what was typed.
    await ownerPage.getByLabel('URL', { exact: true }).fill('https://other.example.com/mcp');
    await ownerPage.getByRole('textbox', { name: /^Name/ }).fill('docs');
    await ownerPage.getByRole('button', { name: 'Add the server' }).click();
    await ownerPage.getByRole('alert').filter({ hasText: 'already has an MCP server named "docs"' }).waitFor();
    expect(await ownerPage.getByLabel('URL', { exact: true }).inputValue()).toBe('https://other.example.com/mcp');

    const phone = await ownerContext.newPage();
    await phone.setViewportSize({ width: PHONE_WIDTH, height: 844 });
    await phone.goto(`${consoleApp.url}/projects/${projectA}/mcp`);
    expect(Number(await phone.evaluate('document.documentElement.scrollWidth'))).toBeLessThanOrEqual(PHONE_WIDTH);
    await phone.close();

    // The allowed tools change in the list: one tool, then every tool the server lists.
    await ownerPage.getByRole('link', { name: 'MCP servers' }).click();
    await ownerPage.getByRole('textbox', { name: 'Allowed tools of docs' }).fill('search');
    await ownerPage.getByRole('button', { name: 'Save the allowed tools of docs' }).click();
    await ownerPage.getByText('The allowed tools are saved').waitFor();
    expect(
      (await new McpServersService(stack.fixtures.db, stack.config, stack.fixtures.accounts).list(projectA))[0]?.tools,
    ).toEqual(['search']);
    await ownerPage.getByRole('textbox', { name: 'Allowed tools of docs' }).fill('');
    await ownerPage.getByRole('button', { name: 'Save the allowed tools of docs' }).click();
    await ownerPage.getByText('The allowed tools are saved').waitFor();
    expect(
      (await new McpServersService(stack.fixtures.db, stack.config, stack.fixtures.accounts).list(projectA))[0]?.tools,
    ).toBeNull();

    // Removing asks first: "Keep it" keeps it, the confirmation's button removes it.
    await ownerPage.getByRole('link', { name: 'Remove the MCP server docs' }).click();
    await ownerPage.getByRole('heading', { name: 'Remove an MCP server' }).waitFor();
    expect(await seriousViolations(ownerPage)).toEqual([]);
    await ownerPage.getByRole('link', { name: 'Keep it' }).click();
    await ownerPage.getByRole('heading', { name: 'MCP servers' }).waitFor();
    expect(
      await new McpServersService(stack.fixtures.db, stack.config, stack.fixtures.accounts).list(projectA),
    ).toHaveLength(1);
    await ownerPage.getByRole('link', { name: 'Remove the MCP server docs' }).click();
    await ownerPage.getByRole('button', { name: 'Remove the server' }).click();
    await ownerPage.getByText('The MCP server is removed').waitFor();
    expect(
      await new McpServersService(stack.fixtures.db, stack.config, stack.fixtures.accounts).list(projectA),
    ).toEqual([]);
  });

  it("downloads a request's generated file from its page", async () => {
    const { key } = await stack.fixtures.accounts.createApiKey(projectA, 'files test');
    stack.models.reply(
      {
        toolCalls: [
          { name: 'write_file', arguments: { name: 'résumé notes.md', content: '# Notes\nfrom the console test' } },
        ],
      },
      { content: 'Wrote it.' },
    );
    const res = await request(stack.api.url, 'POST', '/v1/agent', {
      headers: { authorization: `Bearer ${key}` },
      body: { message: 'Write a file', capabilities: ['files'] },
    });
    expect(res.body).toMatchObject({ status: 'completed', files: [{ name: 'résumé notes.md' }] });
    await eventually(async () => {
      const seen = await ownerPage.goto(`${consoleApp.url}/projects/${projectA}/requests/${res.body.id}`);
      expect(seen?.status()).toBe(200);
      expect(await ownerPage.getByRole('link', { name: 'résumé notes.md' }).count()).toBe(1);
    });
    const [download] = await Promise.all([
      ownerPage.waitForEvent('download'),
      ownerPage.getByRole('link', { name: 'résumé notes.md' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('résumé notes.md');
    expect(readFileSync((await download.path())!, 'utf8')).toBe('# Notes\nfrom the console test');
    expect(await seriousViolations(ownerPage)).toEqual([]);
  });

  it("shows a session's conversation and ends it through a worker: the api then reads it ended", async () => {
    const { key } = await stack.fixtures.accounts.createApiKey(projectA, 'sessions test');
    const auth = { authorization: `Bearer ${key}` };
    const created = await request(stack.api.url, 'POST', '/v1/sessions', { headers: auth });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    stack.models.reply({ content: 'Nice to meet you, Ada.' });
    const answered = await request(stack.api.url, 'POST', `/v1/sessions/${id}/messages`, {
      headers: auth,
      body: { message: 'My name is Ada.' },
    });
    expect(answered.body).toMatchObject({ status: 'completed', message: 'Nice to meet you, Ada.' });

    await ownerPage.getByRole('link', { name: 'Sessions' }).click();
    await eventually(async () => {
      await ownerPage.reload();
      expect(await ownerPage.getByRole('link', { name: `${id.slice(0, 8)}…` }).count()).toBe(1);
    });
    await ownerPage.getByRole('link', { name: `${id.slice(0, 8)}…` }).click();
    await ownerPage.getByRole('heading', { name: `Session ${id}` }).waitFor();
    const conversation = (await ownerPage.locator('ol.conversation').textContent())!;
    expect(conversation).toContain('My name is Ada.');
    expect(conversation).toContain('Nice to meet you, Ada.');
    await ownerPage.screenshot({ path: join(shots, 'session.png'), fullPage: true });
    expect(await seriousViolations(ownerPage)).toEqual([]);

    // Ending asks first, on a page of its own.
    await ownerPage.getByRole('link', { name: 'End the session' }).click();
    await ownerPage.getByRole('heading', { name: 'End a session' }).waitFor();
    expect(
      (
        await stack.fixtures.db.query(`select count(*)::int as n from session_end_requests where session_id = $1`, [id])
      )[0].n,
    ).toBe(0);
    await ownerPage.getByRole('button', { name: 'End the session' }).click();
    await ownerPage.getByText('The session is ending').waitFor();
    // A worker carries the end out; the api reads the session ended, and refuses its messages.
    await eventually(async () => {
      const read = await request(stack.api.url, 'GET', `/v1/sessions/${id}`, { headers: auth });
      expect(read.body.status).toBe('ended');
    });
    const refused = await request(stack.api.url, 'POST', `/v1/sessions/${id}/messages`, {
      headers: auth,
      body: { message: 'Still there?' },
    });
    expect(refused.status).toBe(410);
    await eventually(async () => {
      // The worker marks the request done once the Update has returned.
      expect(
        (
          await stack.fixtures.db.query(`select count(*)::int as n from session_end_requests where session_id = $1`, [
            id,
          ])
        )[0].n,
      ).toBe(0);
      await ownerPage.reload();
      await expect(ownerPage.getByTestId('session-status').textContent()).resolves.toBe('ended');
    });
    expect(await ownerPage.getByRole('link', { name: 'End the session' }).count()).toBe(0);
    // Ending it again is refused with the reason, and asks nothing of the worker.
    const csrf = (await ownerPage.locator('input[name="_csrf"]').first().getAttribute('value'))!;
    const again = await ownerPage.request.post(`${consoleApp.url}/projects/${projectA}/sessions/${id}/end`, {
      form: { _csrf: csrf },
      maxRedirects: 0,
    });
    expect(again.status()).toBe(400);

    const phone = await ownerContext.newPage();
    await phone.setViewportSize({ width: PHONE_WIDTH, height: 844 });
    await phone.goto(`${consoleApp.url}/projects/${projectA}/sessions/${id}`);
    expect(Number(await phone.evaluate('document.documentElement.scrollWidth'))).toBeLessThanOrEqual(PHONE_WIDTH);
    await phone.close();
  });

  it("a member of project A neither sees nor changes project B, by URL or by a direct POST with the member's own CSRF token", async () => {
    const memberEmail = `member-${randomUUID()}@example.com`;
    await ownerPage.getByRole('link', { name: 'Members' }).click();
    await ownerPage.getByLabel('Email').fill(memberEmail);
    await ownerPage.getByRole('button', { name: 'Invite' }).click();
    const link = (await ownerPage.getByTestId('invite-link').textContent())!.trim();
    expect(await seriousViolations(ownerPage)).toEqual([]);

    const memberContext = await browser.newContext({ bypassCSP: true });
    try {
      const member = await memberContext.newPage();
      await acceptAndSignIn(member, link, memberEmail);
      expect(member.url()).toContain(`/projects/${projectA}/`);
      const csrf = (await member.locator('input[name="_csrf"]').first().getAttribute('value'))!;
      const sessionOfB = await request(stack.api.url, 'POST', '/v1/sessions', { headers: authOfB });
      expect(sessionOfB.status).toBe(200);
      ofB.session = sessionOfB.body.id as string;
      // In B's list (the projector has it), so a refusal below is the console's, not a missing row.
      await eventually(async () =>
        expect(
          (await stack.fixtures.db.query(`select count(*)::int as n from sessions where id = $1`, [ofB.session]))[0].n,
        ).toBe(1),
      );

      for (const section of [
        'overview',
        'keys',
        'model',
        'plan',
        'requests',
        'members',
        `keys/${keyOfB}/revoke`,
        'webhooks',
        'mcp',
        `files/${ofB.file}`,
        'sessions',
        `sessions/${ofB.session}`,
      ]) {
        const seen = await member.goto(`${consoleApp.url}/projects/${projectB}/${section}`);
        expect([section, seen?.status()]).toEqual([section, 404]);
      }
      // B's file, session and delivery through A's own pages: the stores look in A only.
      expect((await member.goto(`${consoleApp.url}/projects/${projectA}/files/${ofB.file}`))?.status()).toBe(404);
      expect((await member.goto(`${consoleApp.url}/projects/${projectA}/sessions/${ofB.session}`))?.status()).toBe(404);
      const endViaA = await member.request.post(`${consoleApp.url}/projects/${projectA}/sessions/${ofB.session}/end`, {
        form: { _csrf: csrf },
        maxRedirects: 0,
      });
      expect(endViaA.status()).toBe(404);
      const resendViaA = await member.request.post(
        `${consoleApp.url}/projects/${projectA}/webhooks/deliveries/${ofB.delivery}/resend`,
        { form: { _csrf: csrf }, maxRedirects: 0 },
      );
      expect(resendViaA.status()).toBe(404);
      const keysBefore = await stack.fixtures.accounts.listApiKeys(projectB);
      const posts: [string, Record<string, string>][] = [
        ['keys', { label: 'stolen' }],
        [`keys/${keyOfB}/revoke`, {}],
        ['model', { provider: 'openai', model: 'evil', base_url: 'http://127.0.0.1:9/v1', api_key: 'x' }],
        ['model/test', {}],
        ['members', { email: memberEmail, role: 'owner' }],
        ['webhooks', { url: 'https://evil.example.com/hook' }],
        [`webhooks/${ofB.webhook}/remove`, {}],
        [`webhooks/deliveries/${ofB.delivery}/resend`, {}],
        ['mcp', { url: 'https://evil.example.com/mcp', name: 'evil' }],
        [`mcp/${ofB.mcp}/tools`, { tools: 'stolen' }],
        [`mcp/${ofB.mcp}/remove`, {}],
        [`sessions/${ofB.session}/end`, {}],
      ];
      for (const [action, form] of posts) {
        const answer = await member.request.post(`${consoleApp.url}/projects/${projectB}/${action}`, {
          form: { ...form, _csrf: csrf },
          maxRedirects: 0,
        });
        expect([action, answer.status()]).toEqual([action, 404]);
      }
      const keysAfter = await stack.fixtures.accounts.listApiKeys(projectB);
      expect(keysAfter.map((k) => [k.id, k.revokedAt])).toEqual(keysBefore.map((k) => [k.id, k.revokedAt]));
      expect((await stack.fixtures.accounts.modelConfig(projectB))?.model).toBe('scripted-test');
      const webhooksOfB = new WebhookStore(stack.fixtures.db, stack.config);
      expect((await webhooksOfB.list(projectB)).map((w) => w.id)).toEqual([ofB.webhook]);
      expect((await webhooksOfB.deliveries(projectB)).map((d) => d.id)).toEqual([ofB.delivery]);
      expect(
        (await new McpServersService(stack.fixtures.db, stack.config, stack.fixtures.accounts).list(projectB)).map(
          (m) => [m.id, m.tools],
        ),
      ).toEqual([[ofB.mcp, null]]);
      expect(
        (
          await stack.fixtures.db.query(`select count(*)::int as n from session_end_requests where session_id = $1`, [
            ofB.session,
          ])
        )[0].n,
      ).toBe(0);
      expect(
        (await request(stack.api.url, 'GET', `/v1/sessions/${ofB.session}`, { headers: authOfB })).body.status,
      ).toBe('active');
      // A developer of A is no owner of A either: inviting is the owner's (403: the role is too low).
      const invite = await member.request.post(`${consoleApp.url}/projects/${projectA}/members`, {
        form: { email: `x-${randomUUID()}@example.com`, _csrf: csrf },
        maxRedirects: 0,
      });
      expect(invite.status()).toBe(403);

      // The owner removes the member: A is gone for them too.
      await ownerPage.getByRole('link', { name: `Remove ${memberEmail}` }).click();
      await ownerPage.getByRole('heading', { name: 'Remove a member' }).waitFor();
      await ownerPage.getByRole('button', { name: 'Remove the member' }).click();
      await ownerPage.getByText('The member is removed.').waitFor();
      expect((await member.goto(`${consoleApp.url}/projects/${projectA}/overview`))?.status()).toBe(404);
    } finally {
      await memberContext.close();
    }
  });

  it('answers /healthz, /readyz (PostgreSQL) without a session, and /metrics on its own port only, counting its pages by route', async () => {
    const health = await fetch(`${consoleApp.url}/healthz`);
    expect([health.status, await health.json()]).toEqual([200, { status: 'ok' }]);
    const ready = await fetch(`${consoleApp.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', components: { postgres: { status: 'up' } } });
    expect((await fetch(`${consoleApp.url}/metrics`)).status).toBe(404);
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    // Routes as templates (never a project's id), from the pages this file has opened.
    expect(text).toMatch(/http_request_duration_seconds_count\{[^}]*route="\/projects\/:projectId\/webhooks"/);
    expect(text).not.toContain(projectA);
  });

  it("refuses a POST without the CSRF token, or with another session's", async () => {
    const before = (await stack.fixtures.accounts.listApiKeys(projectA)).length;
    const without = await ownerPage.request.post(`${consoleApp.url}/projects/${projectA}/keys`, {
      form: { label: 'no token' },
      maxRedirects: 0,
    });
    expect(without.status()).toBe(403);
    const other = await consoleAccounts.signIn(owner, password, 'test', null);
    expect(other.ok).toBe(true);
    const wrong = await ownerPage.request.post(`${consoleApp.url}/projects/${projectA}/keys`, {
      form: { label: 'wrong token', _csrf: other.ok ? other.session.csrfToken : '' },
      maxRedirects: 0,
    });
    expect(wrong.status()).toBe(403);
    expect((await stack.fixtures.accounts.listApiKeys(projectA)).length).toBe(before);
  });

  it('slows repeated wrong passwords past the limit, and still lets the right one in', async () => {
    const context = await browser.newContext({ bypassCSP: true });
    try {
      const page = await context.newPage();
      const signIn = async (pw: string): Promise<{ status: number; ms: number }> => {
        await page.goto(`${consoleApp.url}/sign-in`);
        await page.getByLabel('Email').fill(owner);
        await page.getByLabel('Password').fill(pw);
        const started = performance.now();
        const [answer] = await Promise.all([
          page.waitForResponse((r) => r.url().endsWith('/sign-in') && r.request().method() === 'POST'),
          page.getByRole('button', { name: 'Sign in' }).click(),
        ]);
        return { status: answer.status(), ms: performance.now() - started };
      };
      for (let i = 0; i < 5; i++) expect((await signIn('wrong password, surely')).status).toBe(401);
      // The sixth waited before its check (0.5 s, doubling up to 10 s): no lock, a slower guess.
      const sixth = await signIn('wrong password, surely');
      expect(sixth.status).toBe(401);
      expect(sixth.ms).toBeGreaterThanOrEqual(450);
      await page.getByText('Wrong email or password.').waitFor();
      expect((await signIn(password)).status).toBe(303);
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('is dark where the browser prefers it, without serious or critical accessibility findings', async () => {
    const dark = await ownerContext.newPage();
    try {
      await dark.emulateMedia({ colorScheme: 'dark' });
      for (const section of ['overview', 'keys', 'model', 'requests', 'webhooks', 'members']) {
        await dark.goto(`${consoleApp.url}/projects/${projectA}/${section}`);
        const background = await dark.evaluate('getComputedStyle(document.body).backgroundColor');
        expect([section, background]).not.toEqual([section, 'rgb(255, 255, 255)']);
        expect([section, await seriousViolations(dark)]).toEqual([section, []]);
      }
      await dark.goto(`${consoleApp.url}/account`);
      expect(await seriousViolations(dark)).toEqual([]);
    } finally {
      await dark.close();
    }
  });

  it("shows times in the browser's own zone (the UTC text without JavaScript)", async () => {
    const tokyo = await browser.newContext({
      bypassCSP: true,
      timezoneId: 'Asia/Tokyo',
      locale: 'en-US',
      storageState: await ownerContext.storageState(),
    });
    try {
      const page = await tokyo.newPage();
      await page.goto(`${consoleApp.url}/projects/${projectA}/keys`);
      const time = page.locator('time[datetime]').first();
      const datetime = (await time.getAttribute('datetime'))!;
      const expected = new Intl.DateTimeFormat('en-US', {
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        hourCycle: 'h23',
        timeZoneName: 'short',
        timeZone: 'Asia/Tokyo',
      }).format(new Date(datetime));
      await expect(time.textContent()).resolves.toBe(expected);
      expect(expected).toContain('GMT+9');
      await expect(time.getAttribute('title')).resolves.toMatch(/ UTC$/);
      // Without JavaScript the page's own UTC text stays.
      const plain = await browser.newContext({
        javaScriptEnabled: false,
        storageState: await ownerContext.storageState(),
      });
      try {
        const noScript = await plain.newPage();
        await noScript.goto(`${consoleApp.url}/projects/${projectA}/keys`);
        await expect(noScript.locator('time[datetime]').first().textContent()).resolves.toMatch(/ UTC$/);
      } finally {
        await plain.close();
      }
    } finally {
      await tokyo.close();
    }
  });

  it('opens the page asked for while signed out once the user signs in (the deep link)', async () => {
    const context = await browser.newContext({ bypassCSP: true });
    try {
      const page = await context.newPage();
      await page.goto(`${consoleApp.url}/projects/${projectA}/requests?status=completed`);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await page.getByLabel('Email').fill(owner);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Requests' }).waitFor();
      expect(page.url()).toBe(`${consoleApp.url}/projects/${projectA}/requests?status=completed`);
    } finally {
      await context.close();
    }
  });

  it('signs out everywhere: every session of the user ends', async () => {
    await ownerPage.goto(`${consoleApp.url}/account`);
    await ownerPage.getByRole('button', { name: 'Sign out everywhere' }).click();
    await ownerPage.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(
      await consoleAccounts.liveSessions(
        (await stack.fixtures.db.query(`select id from console_users where email = $1`, [owner]))[0].id,
      ),
    ).toEqual([]);
    expect((await ownerPage.goto(`${consoleApp.url}/projects/${projectA}/keys`))?.url()).toContain('/sign-in');
  });
});
