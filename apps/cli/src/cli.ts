import { readFile, writeFile } from 'node:fs/promises';
import { Command, CommanderError, Option } from 'commander';
import type { DataSource } from 'typeorm';
import type { AccountsService } from '#libs/accounts';
import type { AppConfig } from '#libs/config';
import { CAPABILITIES, MODEL_PROVIDERS, PLANS, type AwsCredentials, type Capability, type PlanName } from '#libs/contracts';
import { PROVIDER_GUIDE } from '#libs/llm';
import type { ApiKeyEntity, ProjectEntity } from '#libs/persistence';
import { PROJECTION_NAMES } from '../../projector/src/projections/names.js';
import type { RebuildSource } from '../../projector/src/rebuild.js';
import { addConsoleCommands } from './console.commands.js';
import { addMcpCommands } from './mcp.commands.js';
import { CliRefusal } from './refusal.js';
import { addWebhookCommands } from './webhook.commands.js';

/** Where the CLI writes and reads; injectable so tests capture output. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  readStdin(): Promise<string>;
  env: Readonly<Record<string, string | undefined>>;
}

/** The demo project's console owner (`demo --console-password-file`). */
const DEMO_OWNER = 'demo@example.com';

const projectView = (p: ProjectEntity) => ({
  id: p.id,
  name: p.name,
  plan: p.plan,
  capabilities: p.capabilities,
  credit_balance: p.creditBalance,
  credits_purchased: p.creditsPurchased,
  period_start: p.periodStart.toISOString(),
});

const keyView = (k: ApiKeyEntity) => ({
  id: k.id,
  project_id: k.projectId,
  prefix: k.prefix,
  label: k.label,
  created_at: k.createdAt.toISOString(),
  revoked_at: k.revokedAt?.toISOString() ?? null,
});

function parseList(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter(Boolean);
}

function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new CliRefusal(`"${value}" is not a positive integer`);
  return n;
}

/** Whether `e` is a refusal of the services (loaded only when there is an error to tell). */
async function isServiceRefusal(e: unknown): Promise<boolean> {
  return e instanceof Error && e.name === 'AccountsError' && e instanceof (await import('#libs/accounts')).AccountsError;
}

/**
 * Runs one CLI invocation; returns the exit code (0 done, 1 refused, 2 usage). `config` may be a
 * loader, called the first time a command needs it: `--help` and usage errors need no environment.
 * The service's modules (TypeORM, the services, Kafka, the projections: most of a call's time
 * when they were imported up front) are loaded by the commands that use them.
 */
export async function runCli(argv: readonly string[], config: AppConfig | (() => Promise<AppConfig>), io: CliIo): Promise<number> {
  let loadedConfig: AppConfig | undefined;
  const appConfig = async (): Promise<AppConfig> => (loadedConfig ??= typeof config === 'function' ? await config() : config);
  let db: DataSource | undefined;
  const database = async (): Promise<DataSource> => {
    if (!db) {
      const [{ DataSource }, { dataSourceOptions }] = await Promise.all([import('typeorm'), import('#libs/persistence')]);
      db = new DataSource({ ...dataSourceOptions(await appConfig()), logging: ['error'] });
      await db.initialize();
    }
    return db;
  };
  const accounts = async (): Promise<AccountsService> => {
    const [{ AccountsService }, { EventStore }] = await Promise.all([import('#libs/accounts'), import('#libs/events')]);
    return new AccountsService(await database(), await appConfig(), new EventStore());
  };
  const print = (json: boolean, value: unknown, text: string): void => io.out(json ? `${JSON.stringify(value, null, 2)}\n` : `${text}\n`);
  const jsonOption = new Option('--json', 'print JSON instead of text');

  const program = new Command('mas')
    .description('Operator CLI of the managed agent service: projects, plans, credits, model configuration, MCP servers, API keys, webhooks, console accounts, secret rotation.')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showHelpAfterError('(run with --help for usage)');

  program
    .command('migrate')
    .description('apply pending database migrations')
    .action(async () => {
      const { runMigrations } = await import('#libs/persistence');
      const ran = await runMigrations(await appConfig());
      io.out(ran.length ? `applied ${ran.length} migration(s): ${ran.join(', ')}\n` : 'database is up to date\n');
    });

  const project = program.command('project').description('create and change projects');
  project
    .command('create')
    .description('create a project')
    .requiredOption('--name <name>', 'unique project name')
    .addOption(new Option('--plan <plan>', 'plan').choices(PLANS).default('free'))
    .option('--capabilities <list>', `comma-separated capabilities to enable (default: all the plan allows; valid: ${CAPABILITIES.join(', ')})`, parseList)
    .option('--credits <n>', 'purchased credits to add at once', parsePositiveInt)
    .addOption(jsonOption)
    .action(async (o: { name: string; plan: PlanName; capabilities?: Capability[]; credits?: number; json?: boolean }) => {
      const svc = await accounts();
      let p = await svc.createProject({ name: o.name, plan: o.plan, capabilities: o.capabilities });
      if (o.credits) p = await svc.addCredits(p.id, o.credits);
      print(!!o.json, projectView(p), `created project ${p.name} (${p.id}), plan ${p.plan}, capabilities ${p.capabilities.join(', ') || 'none'}, ${p.creditBalance} credits`);
    });
  project
    .command('list')
    .description('list projects')
    .addOption(jsonOption)
    .action(async (o: { json?: boolean }) => {
      const all = await (await accounts()).listProjects();
      print(!!o.json, all.map(projectView), all.map((p) => `${p.id}  ${p.name}  ${p.plan}  ${p.creditBalance} credits  [${p.capabilities.join(',')}]`).join('\n') || 'no projects');
    });
  project
    .command('show')
    .description('show a project and its model configuration')
    .argument('<project>', 'project id or name')
    .addOption(jsonOption)
    .action(async (ref: string, o: { json?: boolean }) => {
      const svc = await accounts();
      const p = await svc.findProject(ref);
      const model = await svc.modelConfig(p.id);
      const view = { ...projectView(p), model: model && { provider: model.provider, model: model.model, base_url: model.baseUrl, key_set: model.hasKey } };
      const modelText = model ? `${model.provider} ${model.model}${model.baseUrl ? ` at ${model.baseUrl}` : ''}${model.hasKey ? ', key set' : ''}` : 'not configured';
      print(!!o.json, view, `${p.name} (${p.id})\n  plan: ${p.plan}\n  capabilities: ${p.capabilities.join(', ') || 'none'}\n  credits: ${p.creditBalance}${p.creditsPurchased ? '' : ' (never purchased)'}\n  model: ${modelText}`);
    });
  project
    .command('set-plan')
    .description('move a project to another plan')
    .argument('<project>', 'project id or name')
    .addArgument(new Command().createArgument('<plan>', 'free, starter or pro').choices(PLANS))
    .addOption(jsonOption)
    .action(async (ref: string, plan: string, o: { json?: boolean }) => {
      const p = await (await accounts()).setPlan(ref, plan);
      print(!!o.json, projectView(p), `${p.name} is now on the ${p.plan} plan`);
    });
  const capabilities = project.command('capabilities').description('enable or disable capabilities on a project');
  for (const change of ['enable', 'disable'] as const) {
    capabilities
      .command(change)
      .description(`${change} capabilities (${CAPABILITIES.join(', ')})`)
      .argument('<project>', 'project id or name')
      .argument('<capabilities...>', 'capability names, space- or comma-separated')
      .addOption(jsonOption)
      .action(async (ref: string, names: string[], o: { json?: boolean }) => {
        const p = await (await accounts()).setCapabilities(ref, change, names.flatMap(parseList));
        print(!!o.json, projectView(p), `${p.name} capabilities: ${p.capabilities.join(', ') || 'none'}`);
      });
  }
  project
    .command('set-model')
    .description("set the project's language model; secrets are read from environment variables or stdin, never from the command line")
    .argument('<project>', 'project id or name')
    .addOption(new Option('--provider <provider>', 'model provider').choices(MODEL_PROVIDERS).makeOptionMandatory())
    .requiredOption('--model <model>', 'model name (azure-openai: the deployment name; bedrock: the model or inference profile id)')
    .option('--base-url <url>', 'API base URL (an OpenAI-compatible server, a proxy, an Azure gateway, a Bedrock endpoint)')
    .option('--region <region>', 'bedrock: the AWS region, e.g. us-east-1')
    .option('--resource <name>', 'azure-openai: the resource name (https://<name>.openai.azure.com)')
    .option('--api-version <version>', 'azure-openai: v1 (default) or a dated version such as 2024-10-21')
    .option('--key-from-env <VAR>', 'read the model key (bedrock: a Bedrock API key) from this environment variable')
    .option('--key-stdin', 'read the model key from standard input')
    .option('--aws-credentials-from-env', 'bedrock: read AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (optional) from the environment')
    .addHelpText('after', `\nProviders:\n${MODEL_PROVIDERS.map((p) => `  ${p.padEnd(13)} ${PROVIDER_GUIDE[p]}`).join('\n')}`)
    .addOption(jsonOption)
    .action(async (ref: string, o: { provider: string; model: string; baseUrl?: string; region?: string; resource?: string; apiVersion?: string; keyFromEnv?: string; keyStdin?: boolean; awsCredentialsFromEnv?: boolean; json?: boolean }) => {
      let apiKey: string | undefined;
      if (o.keyFromEnv) {
        apiKey = io.env[o.keyFromEnv];
        if (!apiKey) throw new CliRefusal(`environment variable ${o.keyFromEnv} is not set`);
      } else if (o.keyStdin) {
        apiKey = (await io.readStdin()).trim();
        if (!apiKey) throw new CliRefusal('no key on standard input');
      }
      let awsCredentials: AwsCredentials | undefined;
      if (o.awsCredentialsFromEnv) {
        const accessKeyId = io.env['AWS_ACCESS_KEY_ID'];
        const secretAccessKey = io.env['AWS_SECRET_ACCESS_KEY'];
        if (!accessKeyId || !secretAccessKey) throw new CliRefusal('environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set');
        const sessionToken = io.env['AWS_SESSION_TOKEN'];
        awsCredentials = { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
      }
      const m = await (await accounts()).setModel(ref, {
        provider: o.provider,
        model: o.model,
        baseUrl: o.baseUrl ?? null,
        settings: { region: o.region, resourceName: o.resource, apiVersion: o.apiVersion },
        apiKey: apiKey ?? null,
        awsCredentials: awsCredentials ?? null,
      });
      const where = [m.baseUrl && `at ${m.baseUrl}`, m.settings.region && `in ${m.settings.region}`, m.settings.resourceName && `on resource ${m.settings.resourceName}`, m.settings.apiVersion && `API version ${m.settings.apiVersion}`].filter(Boolean).join(', ');
      print(
        !!o.json,
        { provider: m.provider, model: m.model, base_url: m.baseUrl, region: m.settings.region ?? null, resource: m.settings.resourceName ?? null, api_version: m.settings.apiVersion ?? null, key_set: m.hasKey },
        `model set: ${m.provider} ${m.model}${where ? ` ${where}` : ''}${m.hasKey ? ' (key stored encrypted)' : ''}`,
      );
    });
  project
    .command('credits')
    .description('manage credits')
    .command('add')
    .description('add purchased credits')
    .argument('<project>', 'project id or name')
    .argument('<amount>', 'credits to add', parsePositiveInt)
    .addOption(jsonOption)
    .action(async (ref: string, amount: number, o: { json?: boolean }) => {
      const p = await (await accounts()).addCredits(ref, amount);
      print(!!o.json, projectView(p), `${p.name} has ${p.creditBalance} credits`);
    });

  const projections = program.command('projections').description('the read models the projector builds');
  projections
    .command('rebuild')
    .description('rebuild read models into new tables while the projector keeps serving, then swap them in')
    .argument('[name]', `one projection (${PROJECTION_NAMES.join(', ')}); all when omitted`)
    .addOption(new Option('--from <source>', 'read the events from the event store or from Kafka offset 0 (default: the event store where the projection\'s events are in it)').choices(['events', 'kafka']))
    .addOption(jsonOption)
    .action(async (name: string | undefined, o: { from?: RebuildSource; json?: boolean }) => {
      const [{ PROJECTIONS }, { rebuildProjection }, { createKafka }] = await Promise.all([
        import('../../projector/src/projections/index.js'),
        import('../../projector/src/rebuild.js'),
        import('#libs/kafka'),
      ]);
      const chosen = name ? PROJECTIONS.filter((p) => p.name === name) : PROJECTIONS;
      if (chosen.length === 0) throw new CliRefusal(`no projection "${name}"; there are ${PROJECTION_NAMES.join(', ')}`);
      const results = [];
      for (const projection of chosen) {
        const source: RebuildSource = o.from ?? (projection.fromEventStore ? 'events' : 'kafka');
        if (source === 'events' && !projection.fromEventStore) throw new CliRefusal(`projection ${projection.name} reads ${projection.topic}, which is not in the event store: use --from kafka`);
        const { applied, caughtUp } = await rebuildProjection(await database(), projection, source, source === 'kafka' ? createKafka(await appConfig(), 'mas-cli-rebuild') : undefined);
        results.push({ projection: projection.name, from: source, applied, caught_up: caughtUp });
      }
      print(!!o.json, results, results.map((r) => `rebuilt ${r.projection} from ${r.from}: ${r.applied} events, ${r.caught_up} applied by the live projector meanwhile; swapped in`).join('\n'));
    });

  addMcpCommands(program, {
    io,
    print,
    mcpServers: async () => new (await import('#libs/accounts')).McpServersService(await database(), await appConfig(), await accounts()),
  });

  const key = program.command('key').description('issue, list and revoke API keys');
  key
    .command('create')
    .description('issue an API key; the full key is printed once and never stored')
    .argument('<project>', 'project id or name')
    .option('--label <label>', 'a note to tell keys apart')
    .addOption(jsonOption)
    .action(async (ref: string, o: { label?: string; json?: boolean }) => {
      const { key: secret, record } = await (await accounts()).createApiKey(ref, o.label);
      print(!!o.json, { ...keyView(record), key: secret }, `${secret}\n(key id ${record.id}; shown once: store it now)`);
    });
  key
    .command('list')
    .description("list a project's keys (prefixes only)")
    .argument('<project>', 'project id or name')
    .addOption(jsonOption)
    .action(async (ref: string, o: { json?: boolean }) => {
      const keys = await (await accounts()).listApiKeys(ref);
      print(!!o.json, keys.map(keyView), keys.map((k) => `${k.id}  ${k.prefix}…  ${k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : 'active'}${k.label ? `  ${k.label}` : ''}`).join('\n') || 'no keys');
    });
  key
    .command('revoke')
    .description('revoke a key at once, on every api replica')
    .argument('<key-id>', 'the key id (from key list)')
    .addOption(jsonOption)
    .action(async (id: string, o: { json?: boolean }) => {
      const k = await (await accounts()).revokeApiKey(id);
      print(!!o.json, keyView(k), `revoked ${k.prefix}… (${k.id})`);
    });

  const secrets = program.command('secrets').description('rotation of the master key (docs/operations.md)');
  secrets
    .command('reencrypt')
    .description('seal again under MAS_MASTER_KEY every secret sealed under a key of MAS_MASTER_KEYS_PREVIOUS (model keys, MCP headers, webhook secrets); afterwards those keys can be removed')
    .addOption(jsonOption)
    .action(async (o: { json?: boolean }) => {
      const { reencryptSecrets } = await import('#libs/accounts');
      const report = await reencryptSecrets(await database(), await appConfig());
      const lines = Object.entries(report.tables).map(([table, c]) => `${table}: ${c.reencrypted} re-encrypted, ${c.current} already under the current key, ${c.unreadable} unreadable`);
      print(!!o.json, report, lines.join('\n'));
      const unreadable = Object.values(report.tables).reduce((n, c) => n + c.unreadable, 0);
      if (unreadable > 0) throw new CliRefusal(`${unreadable} secret(s) are opened by none of the configured master keys: keep the keys that sealed them`);
    });

  addConsoleCommands(program, {
    print,
    consoleAccounts: async () => {
      const { ConsoleAccountsService, Argon2idHasher } = await import('#libs/accounts');
      return new ConsoleAccountsService(await database(), await appConfig(), await accounts(), new Argon2idHasher());
    },
  });

  addWebhookCommands(program, { accounts, webhooks: async () => new (await import('#libs/webhooks')).WebhookStore(await database(), await appConfig()), print, jsonOption });

  program
    .command('demo')
    .description('create the demo project on first run (pro plan, every capability, credits, the scripted model) and print a working key and curl command')
    .requiredOption('--key-file <path>', 'where the demo key is kept between runs (created with mode 600)')
    .requiredOption('--api-url <url>', 'the api base URL for the printed curl command')
    .option('--console-password-file <path>', "also make the demo project's console owner (demo@example.com), whose password is kept in this file (created with mode 600)")
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
        const consoleAccounts = new ConsoleAccountsService(await database(), await appConfig(), svc, new Argon2idHasher());
        let password = (await readFile(o.consolePasswordFile, 'utf8').catch(() => '')).trim();
        const fresh = !password;
        if (fresh) password = (await import('node:crypto')).randomBytes(18).toString('base64url');
        const { link } = await consoleAccounts.invite(demo.id, DEMO_OWNER, 'owner');
        const token = (link ?? (fresh ? await consoleAccounts.passwordResetLink(DEMO_OWNER) : '')).split('/').pop()!;
        if (token && !(await consoleAccounts.redeemLink(link ? 'invite' : 'reset', token, password))) throw new CliRefusal('could not set the demo owner\'s password');
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
