import { readFile, writeFile } from 'node:fs/promises';
import { Command, CommanderError, Option } from 'commander';
import type { DataSource } from 'typeorm';
import type { AccountsService } from '#libs/accounts';
import type { AppConfig } from '#libs/config';
import { CAPABILITIES, PROJECTION_NAMES } from '#libs/contracts';
import type { RebuildSource } from '#libs/read-models';
import { addConsoleCommands } from './console.commands.js';
import { addDeployCommands } from './deploy.commands.js';
import { addKeyCommands } from './key.commands.js';
import { addMcpCommands } from './mcp.commands.js';
import { addProjectCommands } from './project.commands.js';
import { CliRefusal } from './refusal.js';
import { addWebhookCommands } from './webhook.commands.js';

/** Where the CLI writes and reads; injectable so tests capture output. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  readStdin(): Promise<string>;
  env: Readonly<Record<string, string | undefined>>;
}

/** What the commands share: the I/O, and the configuration, the database and the accounts
 * service, each loaded the first time a command asks for it. */
export interface CliContext {
  readonly io: CliIo;
  appConfig(): Promise<AppConfig>;
  database(): Promise<DataSource>;
  accounts(): Promise<AccountsService>;
  print(json: boolean, value: unknown, text: string): void;
  readonly jsonOption: Option;
}

/** Whether `e` is a refusal of the services (loaded only when there is an error to tell). */
async function isServiceRefusal(e: unknown): Promise<boolean> {
  return (
    e instanceof Error && e.name === 'AccountsError' && e instanceof (await import('#libs/accounts')).AccountsError
  );
}

/**
 * Runs one CLI invocation; returns the exit code (0 done, 1 refused, 2 usage). `config` may be a
 * loader, called the first time a command needs it: `--help` and usage errors need no environment.
 * The service's modules (TypeORM, the services, Kafka, the projections: most of a call's time
 * when they were imported up front) are loaded by the commands that use them.
 */
export async function runCli(
  argv: readonly string[],
  config: AppConfig | (() => Promise<AppConfig>),
  io: CliIo,
): Promise<number> {
  let db: DataSource | undefined;
  const context = cliContext(config, io, (opened) => (db = opened));
  const { print, jsonOption } = context;
  const program = new Command('mas')
    .description(
      'Operator CLI of the managed agent service: projects, plans, credits, model configuration, MCP servers, API keys, webhooks, console accounts, deploys, secret rotation.',
    )
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showHelpAfterError('(run with --help for usage)');

  addMigrateCommand(program, context);
  addProjectCommands(program, context);
  addProjectionCommands(program, context);
  addMcpCommands(program, {
    io,
    print,
    mcpServers: async () =>
      new (await import('#libs/accounts')).McpServersService(
        await context.database(),
        await context.appConfig(),
        await context.accounts(),
      ),
  });
  addKeyCommands(program, context);
  addConsoleCommands(program, {
    print,
    consoleAccounts: async () => {
      const { ConsoleAccountsService, Argon2idHasher } = await import('#libs/accounts');
      return new ConsoleAccountsService(
        await context.database(),
        await context.appConfig(),
        await context.accounts(),
        new Argon2idHasher(),
      );
    },
  });
  addWebhookCommands(program, {
    accounts: context.accounts,
    webhooks: async () =>
      new (await import('#libs/webhooks')).WebhookStore(await context.database(), await context.appConfig()),
    print,
    jsonOption,
  });
  addDeployCommands(program, { appConfig: context.appConfig, print, jsonOption });
  addSecretsCommands(program, context);
  addDemoCommand(program, context);
  addAuditCommand(program, context);
  program.hook('postAction', (_program, action) => auditCommand(action, context));

  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    if (e instanceof CliRefusal || (await isServiceRefusal(e))) {
      io.err(`error: ${(e as Error).message}\n`);
      return 1;
    }
    throw e;
  } finally {
    await db?.destroy();
  }
}

/** The commands that change a project: each is written to the project's audit log when it succeeds. */
const AUDITED_COMMANDS = new Set([
  'project create',
  'project set-plan',
  'project capabilities enable',
  'project capabilities disable',
  'project set-model',
  'project credits add',
  'key create',
  'key revoke',
  'mcp add',
  'mcp remove',
  'webhook add',
  'webhook remove',
  'console invite',
]);

/**
 * Writes a successful change to its project's audit log, as the operator (the OS user and host).
 * Arguments and options go in as they were given: the CLI takes no secret on its command line
 * (keys come from the environment or standard input, by name).
 */
async function auditCommand(action: Command, context: CliContext): Promise<void> {
  const path: string[] = [];
  for (let c: Command | null = action; c?.parent; c = c.parent) path.unshift(c.name());
  const name = path.join(' ');
  if (!AUDITED_COMMANDS.has(name)) return;
  const db = await context.database();
  const options = action.opts<Record<string, unknown>>();
  const [first, ...rest] = action.args;
  let projectId: string | undefined;
  if (name === 'project create') projectId = (await (await context.accounts()).findProject(String(options['name']))).id;
  else if (name === 'key revoke')
    projectId = (
      (await db.query(`select project_id from api_keys where id = $1`, [first])) as { project_id: string }[]
    )[0]?.project_id;
  else if (first) projectId = (await (await context.accounts()).findProject(first)).id;
  if (!projectId) return;
  const { AuditLog } = await import('#libs/accounts');
  const { hostname, userInfo } = await import('node:os');
  delete options['json'];
  await new AuditLog(db).record(
    projectId,
    { actor: `operator:${userInfo().username}`, address: hostname() },
    `cli:${name}`,
    name === 'project create' || name === 'key revoke' ? (first ?? null) : (rest[0] ?? null),
    { args: rest.slice(1), options },
  );
}

/** The commands' shared context; `opened` hears of the database once it is opened (to close it). */
function cliContext(
  config: AppConfig | (() => Promise<AppConfig>),
  io: CliIo,
  opened: (db: DataSource) => void,
): CliContext {
  let loadedConfig: AppConfig | undefined;
  const appConfig = async (): Promise<AppConfig> =>
    (loadedConfig ??= typeof config === 'function' ? await config() : config);
  let db: DataSource | undefined;
  const database = async (): Promise<DataSource> => {
    if (!db) {
      const [{ DataSource }, { dataSourceOptions }] = await Promise.all([
        import('typeorm'),
        import('#libs/persistence'),
      ]);
      db = new DataSource({ ...dataSourceOptions(await appConfig()), logging: ['error'] });
      opened(db);
      await db.initialize();
    }
    return db;
  };
  const accounts = async (): Promise<AccountsService> => {
    const [{ AccountsService }, { EventStore }] = await Promise.all([import('#libs/accounts'), import('#libs/events')]);
    return new AccountsService(await database(), await appConfig(), new EventStore());
  };
  const print = (json: boolean, value: unknown, text: string): void =>
    io.out(json ? `${JSON.stringify(value, null, 2)}\n` : `${text}\n`);
  return { io, appConfig, database, accounts, print, jsonOption: new Option('--json', 'print JSON instead of text') };
}

/** `migrate`. */
function addMigrateCommand(program: Command, { io, appConfig }: CliContext): void {
  program
    .command('migrate')
    .description('apply pending database migrations')
    .action(async () => {
      const { runMigrations } = await import('#libs/persistence');
      const ran = await runMigrations(await appConfig());
      io.out(ran.length ? `applied ${ran.length} migration(s): ${ran.join(', ')}\n` : 'database is up to date\n');
    });
}

/** `audit list`: a project's audit log, newest first (the console shows it to owners). */
function addAuditCommand(program: Command, { database, accounts, print, jsonOption }: CliContext): void {
  program
    .command('audit')
    .description("a project's audit log: every change made in the console or with this CLI")
    .command('list')
    .description('the newest entries first')
    .argument('<project>', 'project id or name')
    .option('--before <id>', 'entries older than this entry id (paging)')
    .option('--limit <n>', 'entries to show (default 50, at most 500)', (v: string) => Number.parseInt(v, 10))
    .addOption(jsonOption)
    .action(async (ref: string, o: { before?: string; limit?: number; json?: boolean }) => {
      const project = await (await accounts()).findProject(ref);
      const { AuditLog } = await import('#libs/accounts');
      const entries = await new AuditLog(await database()).list(project.id, { before: o.before, limit: o.limit });
      print(
        !!o.json,
        entries,
        entries
          .map(
            (e) =>
              `${e.id}\t${e.at.toISOString()}\t${e.actor}\t${e.address ?? '-'}\t${e.action}\t${e.target ?? '-'}\t${JSON.stringify(e.detail)}`,
          )
          .join('\n') || 'no entries',
      );
    });
}

/** `projections rebuild`. */
function addProjectionCommands(program: Command, { database, appConfig, print, jsonOption }: CliContext): void {
  const projections = program.command('projections').description('the read models the projector builds');
  projections
    .command('rebuild')
    .description('rebuild read models into new tables while the projector keeps serving, then swap them in')
    .argument('[name]', `one projection (${PROJECTION_NAMES.join(', ')}); all when omitted`)
    .addOption(
      new Option(
        '--from <source>',
        "read the events from the event store or from Kafka offset 0 (default: the event store where the projection's events are in it)",
      ).choices(['events', 'kafka']),
    )
    .addOption(jsonOption)
    .action(async (name: string | undefined, o: { from?: RebuildSource; json?: boolean }) => {
      const [{ PROJECTIONS, rebuildProjection }, { createKafka }] = await Promise.all([
        import('#libs/read-models'),
        import('#libs/kafka'),
      ]);
      const chosen = name ? PROJECTIONS.filter((p) => p.name === name) : PROJECTIONS;
      if (chosen.length === 0)
        throw new CliRefusal(`no projection "${name}"; there are ${PROJECTION_NAMES.join(', ')}`);
      const results = [];
      for (const projection of chosen) {
        const source: RebuildSource = o.from ?? (projection.fromEventStore ? 'events' : 'kafka');
        if (source === 'events' && !projection.fromEventStore)
          throw new CliRefusal(
            `projection ${projection.name} reads ${projection.topic}, which is not in the event store: use --from kafka`,
          );
        const { applied, caughtUp } = await rebuildProjection(
          await database(),
          projection,
          source,
          source === 'kafka' ? createKafka(await appConfig(), 'mas-cli-rebuild') : undefined,
        );
        results.push({ projection: projection.name, from: source, applied, caught_up: caughtUp });
      }
      print(
        !!o.json,
        results,
        results
          .map(
            (r) =>
              `rebuilt ${r.projection} from ${r.from}: ${r.applied} events, ${r.caught_up} applied by the live projector meanwhile; swapped in`,
          )
          .join('\n'),
      );
    });
}

/** `secrets reencrypt`: the master key's rotation (docs/operations.md). */
function addSecretsCommands(program: Command, { appConfig, database, print, jsonOption }: CliContext): void {
  const secrets = program.command('secrets').description('rotation of the master key (docs/operations.md)');
  secrets
    .command('reencrypt')
    .description(
      'seal again under MAS_MASTER_KEY every secret sealed under a key of MAS_MASTER_KEYS_PREVIOUS (model keys, MCP headers, webhook secrets); afterwards those keys can be removed',
    )
    .addOption(jsonOption)
    .action(async (o: { json?: boolean }) => {
      const { reencryptSecrets } = await import('#libs/accounts');
      const report = await reencryptSecrets(await database(), await appConfig());
      const lines = Object.entries(report.tables).map(
        ([table, c]) =>
          `${table}: ${c.reencrypted} re-encrypted, ${c.current} already under the current key, ${c.unreadable} unreadable`,
      );
      print(!!o.json, report, lines.join('\n'));
      const unreadable = Object.values(report.tables).reduce((n, c) => n + c.unreadable, 0);
      if (unreadable > 0)
        throw new CliRefusal(
          `${unreadable} secret(s) are opened by none of the configured master keys: keep the keys that sealed them`,
        );
    });
}

/** The demo project's console owner (`demo --console-password-file`). */
const DEMO_OWNER = 'demo@example.com';

/** `demo`: what `npm start` prints. */
function addDemoCommand(program: Command, { io, accounts, database, appConfig }: CliContext): void {
  program
    .command('demo')
    .description(
      'create the demo project on first run (pro plan, every capability, credits, the scripted model) and print a working key and curl command',
    )
    .requiredOption('--key-file <path>', 'where the demo key is kept between runs (created with mode 600)')
    .requiredOption('--api-url <url>', 'the api base URL for the printed curl command')
    .option(
      '--console-password-file <path>',
      "also make the demo project's console owner (demo@example.com), whose password is kept in this file (created with mode 600)",
    )
    .action(async (o: { keyFile: string; apiUrl: string; consolePasswordFile?: string }) => {
      const svc = await accounts();
      const existing = await svc.listProjects();
      let demo = existing.find((p) => p.name === 'demo');
      if (!demo) {
        demo = await svc.createProject({ name: 'demo', plan: 'pro', capabilities: CAPABILITIES });
        demo = await svc.addCredits(demo.id, 1000);
        await svc.setModel(demo.id, { provider: 'scripted', model: 'scripted-demo' });
      }
      let secret = (await readFile(o.keyFile, 'utf8').catch(() => '')).trim();
      const principal = secret ? await svc.authenticate(secret) : null;
      if (!principal || principal.project.id !== demo.id) {
        secret = (await svc.createApiKey(demo.id, 'demo (npm start)')).key;
        await writeFile(o.keyFile, `${secret}\n`, { mode: 0o600 });
      }
      let signIn = '';
      if (o.consolePasswordFile) {
        // Through the one-time links an invited owner uses: an invitation the first time, a reset
        // when the password file is gone.
        const { ConsoleAccountsService, Argon2idHasher } = await import('#libs/accounts');
        const consoleAccounts = new ConsoleAccountsService(
          await database(),
          await appConfig(),
          svc,
          new Argon2idHasher(),
        );
        let password = (await readFile(o.consolePasswordFile, 'utf8').catch(() => '')).trim();
        const fresh = !password;
        if (fresh) password = (await import('node:crypto')).randomBytes(18).toString('base64url');
        // The demo owner's account: its invitation's link sets the first password (or, for an
        // account that has one, accepts); a reset sets a new one when the password file is gone.
        const tokenOf = (link: string): string => link.split('/').pop()!;
        const { link } = await consoleAccounts.invite(demo.id, DEMO_OWNER, 'owner');
        const view = link ? await consoleAccounts.link(tokenOf(link)) : null;
        if (view?.purpose === 'accept') await consoleAccounts.acceptInvitation(tokenOf(link!), view.userId);
        const setter =
          view?.purpose === 'set-password'
            ? link
            : fresh
              ? (await consoleAccounts.passwordResetLink(DEMO_OWNER)).link
              : null;
        if (setter && !(await consoleAccounts.setPassword(tokenOf(setter), password)))
          throw new CliRefusal("could not set the demo owner's password");
        if (fresh) await writeFile(o.consolePasswordFile, `${password}\n`, { mode: 0o600 });
        signIn = `    Console      sign in as ${DEMO_OWNER} with password ${password}\n`;
      }
      io.out(
        `  Demo project "demo" (${demo.id}): plan pro, ${demo.creditBalance} credits, scripted model\n` +
          `    API key      ${secret}\n` +
          `    Try it       curl -sS ${o.apiUrl}/v1/agent -H 'Authorization: Bearer ${secret}' -H 'Content-Type: application/json' -d '{"message":"Hello!"}'\n` +
          signIn,
      );
    });
}
