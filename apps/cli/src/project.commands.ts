import { Command, Option } from 'commander';
import {
  CAPABILITIES,
  MODEL_PROVIDERS,
  PLANS,
  PROVIDER_GUIDE,
  type AwsCredentials,
  type Capability,
  type PlanName,
} from '#libs/contracts';
import type { ProjectEntity } from '#libs/persistence';
import type { CliContext, CliIo } from './cli.js';
import { CliRefusal } from './refusal.js';

const projectView = (p: ProjectEntity) => ({
  id: p.id,
  name: p.name,
  plan: p.plan,
  capabilities: p.capabilities,
  credit_balance: p.creditBalance,
  credits_purchased: p.creditsPurchased,
  period_start: p.periodStart.toISOString(),
});

function parseList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new CliRefusal(`"${value}" is not a positive integer`);
  return n;
}

/** `project create|list|show|set-plan|capabilities|set-model|credits`. */
export function addProjectCommands(program: Command, context: CliContext): void {
  const { accounts, print, jsonOption } = context;
  const project = program.command('project').description('create and change projects');
  project
    .command('create')
    .description('create a project')
    .requiredOption('--name <name>', 'unique project name')
    .addOption(new Option('--plan <plan>', 'plan').choices(PLANS).default('free'))
    .option(
      '--capabilities <list>',
      `comma-separated capabilities to enable (default: all the plan allows; valid: ${CAPABILITIES.join(', ')})`,
      parseList,
    )
    .option('--credits <n>', 'purchased credits to add at once', parsePositiveInt)
    .addOption(jsonOption)
    .action(
      async (o: { name: string; plan: PlanName; capabilities?: Capability[]; credits?: number; json?: boolean }) => {
        const svc = await accounts();
        let p = await svc.createProject({ name: o.name, plan: o.plan, capabilities: o.capabilities });
        if (o.credits) p = await svc.addCredits(p.id, o.credits);
        print(
          !!o.json,
          projectView(p),
          `created project ${p.name} (${p.id}), plan ${p.plan}, capabilities ${p.capabilities.join(', ') || 'none'}, ${p.creditBalance} credits`,
        );
      },
    );
  project
    .command('list')
    .description('list projects')
    .addOption(jsonOption)
    .action(async (o: { json?: boolean }) => {
      const all = await (await accounts()).listProjects();
      print(
        !!o.json,
        all.map(projectView),
        all
          .map((p) => `${p.id}  ${p.name}  ${p.plan}  ${p.creditBalance} credits  [${p.capabilities.join(',')}]`)
          .join('\n') || 'no projects',
      );
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
      const view = {
        ...projectView(p),
        model: model && {
          provider: model.provider,
          model: model.model,
          base_url: model.baseUrl,
          key_set: model.hasKey,
        },
      };
      const modelText = model
        ? `${model.provider} ${model.model}${model.baseUrl ? ` at ${model.baseUrl}` : ''}${model.hasKey ? ', key set' : ''}`
        : 'not configured';
      print(
        !!o.json,
        view,
        `${p.name} (${p.id})\n  plan: ${p.plan}\n  capabilities: ${p.capabilities.join(', ') || 'none'}\n  credits: ${p.creditBalance}${p.creditsPurchased ? '' : ' (never purchased)'}\n  model: ${modelText}`,
      );
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
  addCapabilityCommands(project, context);
  addSetModelCommand(project, context);
  addCreditCommands(project, context);
}

/** `project capabilities enable|disable`. */
function addCapabilityCommands(project: Command, { accounts, print, jsonOption }: CliContext): void {
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
}

interface SetModelOptions {
  provider: string;
  model: string;
  baseUrl?: string;
  region?: string;
  resource?: string;
  apiVersion?: string;
  keyFromEnv?: string;
  keyStdin?: boolean;
  awsCredentialsFromEnv?: boolean;
  json?: boolean;
}

/** The model key and AWS credentials, from the environment variables or standard input the
 * operator named: never from the command line. */
async function modelSecrets(
  io: CliIo,
  o: SetModelOptions,
): Promise<{ apiKey?: string; awsCredentials?: AwsCredentials }> {
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
    if (!accessKeyId || !secretAccessKey)
      throw new CliRefusal('environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set');
    const sessionToken = io.env['AWS_SESSION_TOKEN'];
    awsCredentials = { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
  }
  return { apiKey, awsCredentials };
}

/** `project set-model`. */
function addSetModelCommand(project: Command, { io, accounts, print, jsonOption }: CliContext): void {
  project
    .command('set-model')
    .description(
      "set the project's language model; secrets are read from environment variables or stdin, never from the command line",
    )
    .argument('<project>', 'project id or name')
    .addOption(new Option('--provider <provider>', 'model provider').choices(MODEL_PROVIDERS).makeOptionMandatory())
    .requiredOption(
      '--model <model>',
      'model name (azure-openai: the deployment name; bedrock: the model or inference profile id)',
    )
    .option(
      '--base-url <url>',
      'API base URL (an OpenAI-compatible server, a proxy, an Azure gateway, a Bedrock endpoint)',
    )
    .option('--region <region>', 'bedrock: the AWS region, e.g. us-east-1')
    .option('--resource <name>', 'azure-openai: the resource name (https://<name>.openai.azure.com)')
    .option('--api-version <version>', 'azure-openai: v1 (default) or a dated version such as 2024-10-21')
    .option('--key-from-env <VAR>', 'read the model key (bedrock: a Bedrock API key) from this environment variable')
    .option('--key-stdin', 'read the model key from standard input')
    .option(
      '--aws-credentials-from-env',
      'bedrock: read AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (optional) from the environment',
    )
    .addHelpText(
      'after',
      `\nProviders:\n${MODEL_PROVIDERS.map((p) => `  ${p.padEnd(13)} ${PROVIDER_GUIDE[p]}`).join('\n')}`,
    )
    .addOption(jsonOption)
    .action(async (ref: string, o: SetModelOptions) => {
      const { apiKey, awsCredentials } = await modelSecrets(io, o);
      const m = await (
        await accounts()
      ).setModel(ref, {
        provider: o.provider,
        model: o.model,
        baseUrl: o.baseUrl ?? null,
        settings: { region: o.region, resourceName: o.resource, apiVersion: o.apiVersion },
        apiKey: apiKey ?? null,
        awsCredentials: awsCredentials ?? null,
      });
      const where = [
        m.baseUrl && `at ${m.baseUrl}`,
        m.settings.region && `in ${m.settings.region}`,
        m.settings.resourceName && `on resource ${m.settings.resourceName}`,
        m.settings.apiVersion && `API version ${m.settings.apiVersion}`,
      ]
        .filter(Boolean)
        .join(', ');
      print(
        !!o.json,
        {
          provider: m.provider,
          model: m.model,
          base_url: m.baseUrl,
          region: m.settings.region ?? null,
          resource: m.settings.resourceName ?? null,
          api_version: m.settings.apiVersion ?? null,
          key_set: m.hasKey,
        },
        `model set: ${m.provider} ${m.model}${where ? ` ${where}` : ''}${m.hasKey ? ' (key stored encrypted)' : ''}`,
      );
    });
}

/** `project credits add`. */
function addCreditCommands(project: Command, { accounts, print, jsonOption }: CliContext): void {
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
}
