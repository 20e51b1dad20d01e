import { randomInt, randomUUID } from 'node:crypto';
import { jest } from '@jest/globals';
import type { ConsoleRole } from '#libs/accounts';
import { operatorCli } from '../support/cli.js';
import { ConsoleClient, linkIn } from '../support/console-client.js';
import { startConsole, type RunningConsole } from '../support/console.js';
import { testConfig } from '../support/config.js';
import { Fixtures } from '../support/fixtures.js';

// Every route of a project's pages x every role x another project's ids (issue 44; DESIGN.md
// section 11, "console roles"; docs/security.md has the same table): a member below a route's role
// gets 403, a member of another project 404, whatever the method; and every change is in the
// project's audit log, which owners read.
jest.setTimeout(120_000);

const config = testConfig();

/** A route of /projects/:projectId/..., the least role it takes, and a form that changes nothing. */
interface RouteCase {
  readonly method: 'GET' | 'POST';
  /** Express's path, as the console registers it. */
  readonly route: string;
  readonly role: ConsoleRole;
  readonly form?: Record<string, string>;
}

const none = randomUUID();
/** Ids that exist nowhere, so an allowed POST changes nothing (404, or 400 for a bad form). */
const ids: Record<string, string> = {
  keyId: none,
  requestId: none,
  fileId: none,
  sessionId: none,
  userId: none,
  webhookId: none,
  deliveryId: none,
  serverId: none,
};

const ROUTES: readonly RouteCase[] = [
  { method: 'GET', route: 'overview', role: 'viewer' },
  { method: 'GET', route: 'keys', role: 'viewer' },
  { method: 'POST', route: 'keys', role: 'developer', form: { label: 'roles table' } },
  { method: 'GET', route: 'keys/:keyId/revoke', role: 'developer' },
  { method: 'POST', route: 'keys/:keyId/revoke', role: 'developer' },
  { method: 'GET', route: 'model', role: 'viewer' },
  { method: 'POST', route: 'model', role: 'owner', form: { provider: 'no-such-provider', model: 'x' } },
  { method: 'POST', route: 'model/test', role: 'owner' },
  { method: 'GET', route: 'plan', role: 'viewer' },
  { method: 'GET', route: 'requests', role: 'viewer' },
  { method: 'GET', route: 'requests/:requestId', role: 'viewer' },
  { method: 'GET', route: 'files/:fileId', role: 'viewer' },
  { method: 'GET', route: 'sessions', role: 'viewer' },
  { method: 'GET', route: 'sessions/:sessionId', role: 'viewer' },
  { method: 'GET', route: 'sessions/:sessionId/end', role: 'developer' },
  { method: 'POST', route: 'sessions/:sessionId/end', role: 'developer' },
  { method: 'GET', route: 'members', role: 'viewer' },
  { method: 'POST', route: 'members', role: 'owner', form: { email: 'not an address', role: 'viewer' } },
  { method: 'GET', route: 'members/:userId/remove', role: 'owner' },
  { method: 'POST', route: 'members/:userId/remove', role: 'owner' },
  { method: 'GET', route: 'audit', role: 'owner' },
  { method: 'GET', route: 'webhooks', role: 'viewer' },
  { method: 'POST', route: 'webhooks', role: 'developer', form: { url: 'not a url' } },
  { method: 'GET', route: 'webhooks/:webhookId/remove', role: 'developer' },
  { method: 'POST', route: 'webhooks/:webhookId/remove', role: 'developer' },
  { method: 'POST', route: 'webhooks/deliveries/:deliveryId/resend', role: 'developer' },
  { method: 'GET', route: 'mcp', role: 'viewer' },
  { method: 'POST', route: 'mcp', role: 'developer', form: { url: 'not a url' } },
  { method: 'POST', route: 'mcp/:serverId/tools', role: 'developer', form: { tools: 'a' } },
  { method: 'GET', route: 'mcp/:serverId/remove', role: 'developer' },
  { method: 'POST', route: 'mcp/:serverId/remove', role: 'developer' },
];
const RANK: Record<ConsoleRole, number> = { viewer: 0, developer: 1, owner: 2 };
const path = (projectId: string, route: string): string =>
  `/projects/${projectId}/${route.replace(/:(\w+)/g, (_, name: string) => ids[name]!)}`;

describe('console roles: every route x every role x another project', () => {
  let fixtures: Fixtures;
  let consoleApp: RunningConsole;
  let projectA: string;
  let projectB: string;
  const members = {} as Record<ConsoleRole, ConsoleClient>;
  const address = (): string => `198.18.${randomInt(256)}.${randomInt(1, 255)}`;

  const cli = (...argv: string[]): Promise<string> => operatorCli(config, ...argv);

  async function member(projectId: string, role: ConsoleRole): Promise<ConsoleClient> {
    const email = `${role}-${randomUUID()}@example.com`;
    const password = `pw ${randomUUID()}`;
    const link = linkIn(await cli('console', 'invite', projectId, email, '--role', role))!;
    const client = new ConsoleClient(consoleApp.url, { 'x-forwarded-for': address() });
    expect((await client.setPassword(link, password)).status).toBe(303);
    expect((await client.signIn(email, password)).status).toBe(303);
    return client;
  }

  const send = (client: ConsoleClient, c: RouteCase, projectId: string) =>
    c.method === 'GET' ? client.get(path(projectId, c.route)) : client.post(path(projectId, c.route), c.form);

  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
    consoleApp = await startConsole({ CONSOLE_TRUSTED_PROXY_HOPS: '1' });
    projectA = (await fixtures.project()).project.id;
    projectB = (await fixtures.project()).project.id;
    for (const role of ['owner', 'developer', 'viewer'] as const) members[role] = await member(projectA, role);
  });

  afterAll(async () => {
    await consoleApp?.close();
    await fixtures?.close();
  });

  it("the table names every route of a project's pages", () => {
    const server = consoleApp.app.getHttpAdapter().getInstance() as {
      router: { stack: { route?: { path: string; methods: Record<string, boolean> } }[] };
    };
    const registered = server.router.stack
      .filter((l) => l.route?.path.startsWith('/projects/:projectId/'))
      .flatMap((l) =>
        Object.keys(l.route!.methods).map(
          (m) => `${m.toUpperCase()} ${l.route!.path.slice('/projects/:projectId/'.length)}`,
        ),
      );
    expect(new Set(registered)).toEqual(new Set(ROUTES.map((c) => `${c.method} ${c.route}`)));
  });

  it.each(['owner', 'developer', 'viewer'] as const)(
    "a %s gets each route its role allows, 403 for the rest, and 404 for another project's",
    async (role) => {
      const client = members[role];
      const seen: string[] = [];
      for (const c of ROUTES) {
        const own = await send(client, c, projectA);
        const other = await send(client, c, projectB);
        const allowed = RANK[role] >= RANK[c.role];
        seen.push(`${c.method} ${c.route}: ${own.status} ${other.status}`);
        expect({
          route: `${c.method} ${c.route}`,
          status: own.status < 500 && (allowed ? own.status !== 403 : own.status === 403),
        }).toEqual({
          route: `${c.method} ${c.route}`,
          status: true,
        });
        expect({ route: `${c.method} ${c.route}`, other: other.status }).toEqual({
          route: `${c.method} ${c.route}`,
          other: 404,
        });
      }
      expect(seen).toHaveLength(ROUTES.length);
    },
  );

  it("a developer revokes the keys they issued, not another member's; an owner any", async () => {
    const issued = await members.developer.post(`/projects/${projectA}/keys`, { label: 'mine' });
    expect(issued.status).toBe(303);
    const keys = await fixtures.accounts.listApiKeys(projectA);
    const mine = keys.find((k) => k.label === 'mine')!;
    const ownerIssued = await members.owner.post(`/projects/${projectA}/keys`, { label: 'the owner s' });
    expect(ownerIssued.status).toBe(303);
    const theirs = (await fixtures.accounts.listApiKeys(projectA)).find((k) => k.label === 'the owner s')!;
    expect((await members.developer.post(`/projects/${projectA}/keys/${theirs.id}/revoke`)).status).toBe(403);
    expect((await members.developer.post(`/projects/${projectA}/keys/${mine.id}/revoke`)).status).toBe(303);
    expect((await members.owner.post(`/projects/${projectA}/keys/${theirs.id}/revoke`)).status).toBe(303);
    // Another project's key, by a path of one's own project: 404.
    const keyOfB = (await fixtures.accounts.listApiKeys(projectB))[0]!;
    expect((await members.owner.post(`/projects/${projectA}/keys/${keyOfB.id}/revoke`)).status).toBe(404);
    expect((await fixtures.accounts.listApiKeys(projectB))[0]!.revokedAt).toBeNull();
  });

  it("writes every change to the audit log, the console's and the CLI's; owners read it, in the console and with the CLI", async () => {
    await cli('project', 'credits', 'add', projectA, '5');
    const log = await members.owner.get(`/projects/${projectA}/audit`);
    expect(log.status).toBe(200);
    for (const action of ['key.issue', 'key.revoke', 'cli:project credits add', 'cli:console invite'])
      expect(log.text).toContain(action);
    expect((await members.developer.get(`/projects/${projectA}/audit`)).status).toBe(403);
    const listed = JSON.parse(await cli('audit', 'list', projectA, '--json')) as { action: string; actor: string }[];
    expect(listed.map((e) => e.action)).toEqual(expect.arrayContaining(['key.issue', 'cli:project credits add']));
    expect(listed.find((e) => e.action === 'key.issue')!.actor).toMatch(/^user:/);
    expect(listed.find((e) => e.action === 'cli:project credits add')!.actor).toMatch(/^operator:/);
    // Another project's log has none of it.
    expect(JSON.parse(await cli('audit', 'list', projectB, '--json'))).not.toEqual(
      expect.arrayContaining([expect.objectContaining({ action: 'key.issue' })]),
    );
  });
});
