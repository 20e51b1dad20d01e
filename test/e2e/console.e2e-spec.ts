import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { Argon2idHasher, ConsoleAccountsService } from '#libs/accounts';
import { runCli } from '../../apps/cli/src/cli.js';
import { startConsole, type RunningConsole } from '../support/console.js';
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

describe('the customer console', () => {
  const stack = e2eStack({ name: 'console', pipeline: true });
  const shots = process.env['MAS_CONSOLE_SCREENSHOTS'] ?? mkdtempSync(join(tmpdir(), 'mas-console-'));
  let consoleApp: RunningConsole;
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

  const path = (link: string): string => new URL(link).pathname;
  const cli = async (...argv: string[]): Promise<string> => {
    let out = '';
    const code = await runCli(argv, stack.config, { out: (s) => (out += s), err: (s) => (out += s), readStdin: async () => '', env: {} });
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
      const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string | null; nodes: { target: unknown[] }[] }[] }> } }).axe;
      return (await axe.run()).violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => String(n.target[0])) }));
    });
    return found.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.targets.join(', ')}`);
  }

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (npm test does, as root: scripts/browser.sh)`);
    mkdirSync(shots, { recursive: true });
    consoleApp = await startConsole(stack.env);
    consoleAccounts = new ConsoleAccountsService(stack.fixtures.db, stack.config, stack.fixtures.accounts, new Argon2idHasher());
    // Failed sign-ins from loopback are counted per address for 15 minutes: earlier runs on this
    // database must not throttle this one.
    await stack.fixtures.db.query(`delete from console_signin_failures where scope like 'address:%'`);
    projectA = (await stack.fixtures.project({ model: null, credits: 50 })).project.id;
    const b = await stack.fixtures.project();
    projectB = b.project.id;
    keyOfB = (await stack.fixtures.accounts.listApiKeys(projectB))[0]!.id;
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
    await expect(ownerPage.getByTestId('test-answer').textContent()).resolves.toContain('Hello from the scripted model.');
    await ownerPage.screenshot({ path: join(shots, 'model.png'), fullPage: true });
    expect(await seriousViolations(ownerPage)).toEqual([]);

    stack.models.reply({ status: 400, errorMessage: 'The model test-model does not exist.' });
    await ownerPage.getByRole('button', { name: 'Send a test request' }).click();
    await expect(ownerPage.getByTestId('test-error').textContent()).resolves.toContain('does not exist');
    stack.models.requireKey(undefined);
  });

  it('shows the request in the list and its timeline; a revoked key is refused by the api', async () => {
    stack.models.reply({ content: 'Console says hi.' });
    const res = await request(stack.api.url, 'POST', '/v1/agent', { headers: { authorization: `Bearer ${apiKey}` }, body: { message: 'Hello' } });
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
    await eventually(async () => expect((await request(stack.api.url, 'POST', '/v1/agent', { headers: { authorization: `Bearer ${apiKey}` }, body: { message: 'Hello again' } })).status).toBe(401), 5000);
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

      for (const section of ['overview', 'keys', 'model', 'plan', 'requests', 'members', `keys/${keyOfB}/revoke`]) {
        const seen = await member.goto(`${consoleApp.url}/projects/${projectB}/${section}`);
        expect([section, seen?.status()]).toEqual([section, 404]);
      }
      const keysBefore = await stack.fixtures.accounts.listApiKeys(projectB);
      const posts: [string, Record<string, string>][] = [
        ['keys', { label: 'stolen' }],
        [`keys/${keyOfB}/revoke`, {}],
        ['model', { provider: 'openai', model: 'evil', base_url: 'http://127.0.0.1:9/v1', api_key: 'x' }],
        ['model/test', {}],
        ['members', { email: memberEmail, role: 'owner' }],
      ];
      for (const [action, form] of posts) {
        const answer = await member.request.post(`${consoleApp.url}/projects/${projectB}/${action}`, { form: { ...form, _csrf: csrf }, maxRedirects: 0 });
        expect([action, answer.status()]).toEqual([action, 404]);
      }
      const keysAfter = await stack.fixtures.accounts.listApiKeys(projectB);
      expect(keysAfter.map((k) => [k.id, k.revokedAt])).toEqual(keysBefore.map((k) => [k.id, k.revokedAt]));
      expect((await stack.fixtures.accounts.modelConfig(projectB))?.model).toBe('scripted-test');
      // A member of A is no owner of A either: inviting is the owner's.
      const invite = await member.request.post(`${consoleApp.url}/projects/${projectA}/members`, { form: { email: `x-${randomUUID()}@example.com`, _csrf: csrf }, maxRedirects: 0 });
      expect(invite.status()).toBe(404);

      // The owner removes the member: A is gone for them too.
      await ownerPage.getByRole('button', { name: `Remove ${memberEmail}` }).click();
      await ownerPage.getByText('The member is removed.').waitFor();
      expect((await member.goto(`${consoleApp.url}/projects/${projectA}/overview`))?.status()).toBe(404);
    } finally {
      await memberContext.close();
    }
  });

  it('refuses a POST without the CSRF token, or with another session\'s', async () => {
    const before = (await stack.fixtures.accounts.listApiKeys(projectA)).length;
    const without = await ownerPage.request.post(`${consoleApp.url}/projects/${projectA}/keys`, { form: { label: 'no token' }, maxRedirects: 0 });
    expect(without.status()).toBe(403);
    const other = await consoleAccounts.signIn(owner, password, 'test', null);
    expect(other.ok).toBe(true);
    const wrong = await ownerPage.request.post(`${consoleApp.url}/projects/${projectA}/keys`, { form: { label: 'wrong token', _csrf: other.ok ? other.session.csrfToken : '' }, maxRedirects: 0 });
    expect(wrong.status()).toBe(403);
    expect((await stack.fixtures.accounts.listApiKeys(projectA)).length).toBe(before);
  });

  it('throttles repeated wrong passwords: past the limit even the right one is refused', async () => {
    const context = await browser.newContext({ bypassCSP: true });
    try {
      const page = await context.newPage();
      const signIn = async (pw: string): Promise<number> => {
        await page.goto(`${consoleApp.url}/sign-in`);
        await page.getByLabel('Email').fill(owner);
        await page.getByLabel('Password').fill(pw);
        const [answer] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/sign-in') && r.request().method() === 'POST'), page.getByRole('button', { name: 'Sign in' }).click()]);
        return answer.status();
      };
      for (let i = 0; i < 5; i++) expect(await signIn('wrong password, surely')).toBe(401);
      expect(await signIn(password)).toBe(429);
      await page.getByText('Too many failed sign-ins.').waitFor();
      await page.screenshot({ path: join(shots, 'sign-in-throttled.png') });
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('signs out everywhere: every session of the user ends', async () => {
    await ownerPage.goto(`${consoleApp.url}/account`);
    await ownerPage.getByRole('button', { name: 'Sign out everywhere' }).click();
    await ownerPage.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await consoleAccounts.liveSessions((await stack.fixtures.db.query(`select id from console_users where email = $1`, [owner]))[0].id)).toEqual([]);
    expect((await ownerPage.goto(`${consoleApp.url}/projects/${projectA}/keys`))?.url()).toContain('/sign-in');
  });
});
