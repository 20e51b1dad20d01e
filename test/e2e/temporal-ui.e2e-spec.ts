import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { agentRequestWorkflowId } from '#libs/contracts';
import { startApi, type RunningApi } from '../support/api.js';
import { testConfig } from '../support/config.js';
import { startDevTemporal, type DevTemporal } from '../support/dev-temporal.js';
import { Fixtures } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { APP_CLOSE_TIMEOUT_MS, startWorker, type RunningWorker } from '../support/worker.js';

// The Temporal UI shows a request's payloads decrypted through the api's codec endpoint, and
// without the codec it shows none of them: a real Chromium (Debian's package, installed by
// scripts/browser.sh from `npm test`) driven by Playwright against a Temporal dev server of this
// file's own, started with `--ui-codec-endpoint` as scripts/stack.sh starts the shared one (whose
// codec endpoint is the port of `npm start`'s api, not a test's). Two ways in: the local stack's,
// the token in the endpoint's path (MAS_CODEC_TOKEN_IN_PATH); and the production one, an operator
// signed in at /codec/session whose UI sends the cookie (includeCredentials), no token in any URL.
const CHROMIUM = '/usr/bin/chromium';
// Its own set-up, not e2eStack: the apps use a Temporal dev server of this file's own.
const config = testConfig();

describe('the Temporal UI with the codec endpoint', () => {
  const token = randomBytes(24).toString('hex');
  let fixtures: Fixtures;
  let temporal: DevTemporal;
  let proxy: TcpProxy;
  let worker: RunningWorker;
  let api: RunningApi;
  let browser: Browser;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(
        `${CHROMIUM} is missing: install Debian's chromium package (npm test does, as root: scripts/browser.sh)`,
      );
    // The dev server takes its codec endpoint at start, before the api has its ephemeral port: the
    // endpoint is a proxy whose target is filled in once the api listens.
    const target = { host: '127.0.0.1', port: 0 };
    proxy = await startTcpProxy(target);
    temporal = await startDevTemporal({ codecEndpoint: `http://127.0.0.1:${proxy.port}/codec/${token}` });
    const env = {
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_UI_URL: temporal.uiUrl,
      MAS_CODEC_TOKEN: token,
      MAS_CODEC_TOKEN_IN_PATH: 'true',
      TEMPORAL_TASK_QUEUE: `e2e-temporal-ui-${randomUUID()}`,
    };
    fixtures = await Fixtures.open(config);
    worker = await startWorker(env);
    api = await startApi(env);
    target.port = Number(new URL(api.url).port);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await api?.close();
    await worker?.close();
    await temporal?.close();
    await proxy?.close();
    await fixtures?.close();
  }, APP_CLOSE_TIMEOUT_MS);

  /** Opens the workflow of `requestId` as an operator does: the list filtered by its id, then the run. */
  async function openRequest(page: Page, requestId: string): Promise<void> {
    const workflowId = agentRequestWorkflowId(requestId);
    await page.goto(
      `${temporal.uiUrl}/namespaces/default/workflows?query=${encodeURIComponent(`WorkflowId="${workflowId}"`)}`,
    );
    await page.getByRole('link', { name: workflowId }).first().click();
    await page.waitForURL(/\/history$/);
  }

  /** A finished request whose message carries a secret word; its id and the word. */
  async function requestWithSecret(): Promise<{ id: string; secret: string }> {
    const { auth } = await fixtures.project({ credits: 10 });
    const secret = `heron-${randomUUID()}`;
    const res = await request(api.url, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: `Please remember ${secret}` },
    });
    expect(res.status).toBe(200);
    return { id: res.body.id as string, secret };
  }

  it("shows the customer's message decrypted to an operator signed in with a cookie, no token in a URL", async () => {
    const { id, secret } = await requestWithSecret();
    const codec = `http://127.0.0.1:${proxy.port}/codec`;
    const context = await browser.newContext();
    try {
      // What the operator does once: signs in on the api's form, and in the UI's Codec Server
      // settings gives the endpoint with "Include cross-origin credentials" (the UI keeps both in
      // its local storage; the UI server's own config has the same as `codec.includeCredentials`,
      // as the cluster profile sets it).
      const signIn = await context.newPage();
      await signIn.goto(`${codec}/session`);
      await signIn.getByLabel('Operator token').fill(token);
      await Promise.all([
        signIn.waitForURL(`${temporal.uiUrl}/**`),
        signIn.getByRole('button', { name: 'Sign in' }).click(),
      ]);
      await signIn.close();
      await context.addInitScript({
        content: [
          `localStorage.setItem('endpoint', ${JSON.stringify(JSON.stringify(codec))});`,
          `localStorage.setItem('includeCredentials', 'true');`,
          `localStorage.setItem('overrideRemoteCodecConfiguration', 'true');`,
        ].join('\n'),
      });

      const page = await context.newPage();
      const urls: string[] = [];
      page.on('request', (r) => urls.push(r.url()));
      const decodes = page.waitForResponse(
        (r) => r.url() === `${codec}/decode` && r.request().method() === 'POST' && r.status() === 200,
      );
      await openRequest(page, id);
      await decodes;
      await page.getByText(secret).first().waitFor({ timeout: 15_000 });
      expect(urls.filter((u) => u.includes(token))).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it("shows the customer's message decrypted, and without the codec does not", async () => {
    const { id, secret } = await requestWithSecret();
    const res = { body: { id } };

    const decoded = await browser.newPage();
    try {
      const decodes = decoded.waitForResponse(
        (r) => r.url().includes(`/codec/${token}/decode`) && r.request().method() === 'POST' && r.status() === 200,
      );
      await openRequest(decoded, res.body.id);
      await decodes;
      await decoded.getByText(secret).first().waitFor({ timeout: 15_000 });
    } finally {
      await decoded.close();
    }

    // The same page with the codec endpoint unreachable: what anyone without it sees.
    const raw = await browser.newPage();
    try {
      let refused = 0;
      await raw.route('**/codec/**', async (route) => {
        refused += 1;
        await route.abort();
      });
      await openRequest(raw, res.body.id);
      // The input as stored: its encoding `binary/encrypted` (base64 in the UI) and sealed data.
      await raw.getByText('YmluYXJ5L2VuY3J5cHRlZA==').first().waitFor({ timeout: 15_000 });
      expect(refused).toBeGreaterThan(0);
      expect(await raw.content()).not.toContain(secret);
    } finally {
      await raw.close();
    }
  }, 60_000);
});
