import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { testConfig } from '../../../test/support/config.js';
import { runCli, type CliIo } from './cli.js';

const config = testConfig();

async function cli(
  args: string,
  env: Record<string, string> = {},
  stdin = '',
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CliIo = { out: (s) => void (out += s), err: (s) => void (err += s), readStdin: async () => stdin, env };
  const code = await runCli(args.split(' ').filter(Boolean), config, io);
  return { code, out, err };
}

describe('operator CLI', () => {
  const name = `cli-${Math.random().toString(36).slice(2)}`;

  it('creates a project, changes it, and prints JSON on request', async () => {
    const created = await cli(`project create --name ${name} --plan starter --credits 40 --json`);
    expect(created.code).toBe(0);
    expect(JSON.parse(created.out)).toMatchObject({
      name,
      plan: 'starter',
      credit_balance: 40,
      credits_purchased: true,
    });

    expect((await cli(`project set-plan ${name} pro`)).out).toBe(`${name} is now on the pro plan\n`);
    expect((await cli(`project capabilities disable ${name} code,data`)).out).toBe(
      `${name} capabilities: chat, research, documents, files\n`,
    );
    expect((await cli(`project credits add ${name} 10`)).out).toBe(`${name} has 50 credits\n`);
  });

  it('reads a model key from the environment or stdin, never prints it', async () => {
    const fromEnv = await cli(`project set-model ${name} --provider openai --model gpt-4o-mini --key-from-env MY_KEY`, {
      MY_KEY: 'sk-env-secret',
    });
    expect(fromEnv).toMatchObject({ code: 0, out: 'model set: openai gpt-4o-mini (key stored encrypted)\n' });
    const fromStdin = await cli(
      `project set-model ${name} --provider anthropic --model claude --key-stdin --json`,
      {},
      'sk-stdin-secret\n',
    );
    expect(JSON.parse(fromStdin.out)).toEqual({
      provider: 'anthropic',
      model: 'claude',
      base_url: null,
      region: null,
      resource: null,
      api_version: null,
      key_set: true,
    });
    const shown = await cli(`project show ${name} --json`);
    expect(shown.out).not.toContain('sk-');
    const missing = await cli(`project set-model ${name} --provider openai --model m --key-from-env NOPE`);
    expect(missing).toMatchObject({ code: 1, err: 'error: environment variable NOPE is not set\n' });
  });

  it("takes each provider's own settings and secrets, checked at set time", async () => {
    const bedrock = await cli(
      `project set-model ${name} --provider bedrock --model anthropic.claude-3-5-haiku-20241022-v1:0 --region eu-west-1 --aws-credentials-from-env --json`,
      {
        AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE0000',
        AWS_SECRET_ACCESS_KEY: 'aws-secret-never-printed',
      },
    );
    expect(JSON.parse(bedrock.out)).toEqual({
      provider: 'bedrock',
      model: 'anthropic.claude-3-5-haiku-20241022-v1:0',
      base_url: null,
      region: 'eu-west-1',
      resource: null,
      api_version: null,
      key_set: true,
    });
    const azure = await cli(
      `project set-model ${name} --provider azure-openai --model my-gpt4o --resource acme-openai --api-version 2024-10-21 --key-from-env AZ`,
      { AZ: 'azure-key' },
    );
    expect(azure).toMatchObject({
      code: 0,
      out: 'model set: azure-openai my-gpt4o on resource acme-openai, API version 2024-10-21 (key stored encrypted)\n',
    });
    const google = await cli(`project set-model ${name} --provider google --model gemini-2.5-flash --key-from-env G`, {
      G: 'google-key',
    });
    expect(google.code).toBe(0);
    const mistral = await cli(
      `project set-model ${name} --provider mistral --model mistral-small-latest --key-stdin`,
      {},
      'mistral-key\n',
    );
    expect(mistral.code).toBe(0);
    for (const out of [bedrock.out, azure.out, google.out, mistral.out])
      expect(out).not.toMatch(/secret|azure-key|google-key|mistral-key/);

    const refusals: [string, Record<string, string>, string][] = [
      [
        `--provider bedrock --model m --aws-credentials-from-env`,
        { AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' },
        'error: provider "bedrock" needs a region (--region)\n',
      ],
      [
        `--provider bedrock --model m --region mars-1 --aws-credentials-from-env`,
        { AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' },
        'error: "mars-1" is not an AWS region (e.g. us-east-1)\n',
      ],
      [
        `--provider bedrock --model m --region us-east-1`,
        {},
        'error: provider "bedrock" needs AWS credentials or a Bedrock API key\n',
      ],
      [
        `--provider bedrock --model m --region us-east-1 --aws-credentials-from-env`,
        { AWS_ACCESS_KEY_ID: 'a' },
        'error: environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set\n',
      ],
      [
        `--provider azure-openai --model d --key-from-env K`,
        { K: 'k' },
        'error: provider "azure-openai" needs a resource name (--resource) or a base URL\n',
      ],
      [
        `--provider azure-openai --model d --resource acme --api-version latest --key-from-env K`,
        { K: 'k' },
        'error: "latest" is not an Azure OpenAI API version (v1, or a date such as 2024-10-21)\n',
      ],
      [
        `--provider azure-openai --model d --resource bad_name! --key-from-env K`,
        { K: 'k' },
        'error: "bad_name!" is not an Azure resource name (letters, digits and hyphens, 2 to 64)\n',
      ],
      [
        `--provider openai --model m --region us-east-1 --key-from-env K`,
        { K: 'k' },
        'error: region does not apply to provider "openai"\n',
      ],
      [
        `--provider google --model m`,
        {},
        'error: provider "google" needs a model key (or a base URL of a server that needs none)\n',
      ],
      [
        `--provider mistral --model m --base-url ftp://x --key-from-env K`,
        { K: 'k' },
        'error: base URL must be http or https\n',
      ],
    ];
    for (const [args, env, err] of refusals)
      expect(await cli(`project set-model ${name} ${args}`, env)).toMatchObject({ code: 1, err });
    const help = await cli('project set-model --help');
    expect(help.out).toContain('bedrock       Amazon Bedrock Converse API');
  });

  it('issues, lists and revokes keys; the full key is printed once', async () => {
    const created = await cli(`key create ${name} --label ci --json`);
    const key = JSON.parse(created.out);
    expect(key.key).toMatch(/^sk-mas_[0-9A-Za-z]{43}$/);
    const listed = await cli(`key list ${name} --json`);
    expect(listed.out).not.toContain(key.key);
    expect(JSON.parse(listed.out)).toEqual([
      expect.objectContaining({ id: key.id, prefix: key.key.slice(0, 11), revoked_at: null }),
    ]);
    expect((await cli(`key revoke ${key.id}`)).code).toBe(0);
    expect(JSON.parse((await cli(`key list ${name} --json`)).out)[0].revoked_at).not.toBeNull();
  });

  it('exits 2 with usage help for a usage error and 1 for a refused request', async () => {
    const usage = await cli('project create --plan gold');
    expect(usage.code).toBe(2);
    expect(usage.err).toMatch(/error: /);
    expect((await cli('project set-plan no-such-project pro')).code).toBe(1);
    const help = await cli('key create --help');
    expect(help.code).toBe(0);
    expect(help.out).toContain('Usage: mas key create [options] <project>');
  });

  it('rebuilds a projection with one command, and refuses an unknown one or a source it cannot read', async () => {
    const rebuilt = await cli('projections rebuild sessions --json');
    expect(rebuilt.code).toBe(0);
    expect(JSON.parse(rebuilt.out)).toEqual([
      { projection: 'sessions', from: 'events', applied: expect.any(Number), caught_up: expect.any(Number) },
    ]);
    expect(await cli('projections rebuild nothing')).toMatchObject({
      code: 1,
      err: expect.stringContaining('no projection "nothing"'),
    });
    expect(await cli('projections rebuild usage --from events')).toMatchObject({
      code: 1,
      err: expect.stringContaining('use --from kafka'),
    });
  });

  it('answers --help with an empty environment, and names the missing variables only for a command that needs them', async () => {
    const main = resolve(import.meta.dirname, '../../../dist/apps/cli/src/main.js');
    if (!existsSync(main)) throw new Error('dist/ is missing: `npm test` builds it first');
    // Only PATH: no DATABASE_URL, no keys, no MAS_HOME (as on an operator's laptop).
    const run = (...args: string[]) =>
      promisify(execFile)(process.execPath, [main, ...args], { env: { PATH: process.env.PATH } }).then(
        (r) => ({ code: 0, ...r }),
        (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
      );
    const help = await run('--help');
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toContain('Usage: mas [options] [command]');
    const setModelHelp = await run('project', 'set-model', '--help');
    expect(setModelHelp).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('bedrock       Amazon Bedrock Converse API'),
    });
    expect(await run('projections', 'rebuild', '--help')).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('one projection (usage, request-log, sessions)'),
    });
    expect(await run('project', 'create', '--plan', 'gold')).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("error: option '--plan <plan>' argument 'gold' is invalid"),
    });
    const list = await run('project', 'list');
    expect(list).toMatchObject({ code: 1, stdout: '' });
    expect(list.stderr).toContain('Invalid configuration:');
    expect(list.stderr).toContain('DATABASE_URL is required but not set');
  });
});
