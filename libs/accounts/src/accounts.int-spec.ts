import { DataSource } from 'typeorm';
import { dataSourceOptions } from '#libs/persistence';
import { testConfig } from '../../../test/support/config.js';
import { AccountsError, AccountsService } from './accounts.service.js';
import { EventStore } from '#libs/events';

const config = testConfig();

describe('AccountsService against PostgreSQL', () => {
  let db: DataSource;
  let accounts: AccountsService;
  beforeAll(async () => {
    db = new DataSource({ ...dataSourceOptions(config), logging: false });
    await db.initialize();
    accounts = new AccountsService(db, config, new EventStore());
  });
  afterAll(async () => {
    await db.destroy();
  });

  const uniqueName = () => `acct-${Math.random().toString(36).slice(2)}`;

  it('stores no full API key and no plaintext model key in any row', async () => {
    const project = await accounts.createProject({ name: uniqueName(), plan: 'pro' });
    const { key } = await accounts.createApiKey(project.id);
    const modelKey = 'sk-provider-plaintext-0123456789';
    await accounts.setModel(project.id, { provider: 'openai', model: 'gpt-x', apiKey: modelKey });

    const dump: unknown[] = [
      ...(await db.query(`select * from projects where id = $1`, [project.id])),
      ...(await db.query(`select * from api_keys where project_id = $1`, [project.id])),
      ...(await db.query(`select * from model_configs where project_id = $1`, [project.id])),
    ];
    const text = JSON.stringify(dump, (_, v: unknown) =>
      v && typeof v === 'object' && 'type' in v && v.type === 'Buffer'
        ? Buffer.from((v as unknown as { data: number[] }).data).toString('latin1')
        : v,
    );
    expect(text).not.toContain(key);
    expect(text).not.toContain(key.slice(7, 30));
    expect(text).not.toContain(modelKey);
    expect(text).toContain(key.slice(0, 11)); // the display prefix is all that is kept

    expect((await accounts.modelCredentials(project.id))?.apiKey).toBe(modelKey);
    expect(await accounts.modelConfig(project.id)).toEqual({
      provider: 'openai',
      model: 'gpt-x',
      baseUrl: null,
      settings: {},
      hasKey: true,
    });
  });

  it("stores bedrock's AWS credentials encrypted, its region in plain text, and gives them back only decrypted for the call", async () => {
    const project = await accounts.createProject({ name: uniqueName(), plan: 'pro' });
    const aws = {
      accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
      secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      sessionToken: 'session-token-plaintext',
    };
    await accounts.setModel(project.id, {
      provider: 'bedrock',
      model: 'amazon.nova-lite-v1:0',
      settings: { region: 'eu-central-1' },
      awsCredentials: aws,
    });
    const [row] = (await db.query(
      `select settings, encode(key_ciphertext, 'escape') as sealed from model_configs where project_id = $1`,
      [project.id],
    )) as { settings: unknown; sealed: string }[];
    expect(row!.settings).toEqual({ region: 'eu-central-1' });
    for (const secret of Object.values(aws)) expect(row!.sealed).not.toContain(secret);
    expect(await accounts.modelCredentials(project.id)).toEqual({
      provider: 'bedrock',
      model: 'amazon.nova-lite-v1:0',
      baseUrl: null,
      settings: { region: 'eu-central-1' },
      apiKey: null,
      awsCredentials: aws,
      // The operator's MODEL_ALLOW_HOSTS, which the call is held to (the test environment's, if any).
      allowHosts: config.modelAllowHosts,
    });

    // A Bedrock API key instead, and Azure's settings: the view shows settings, never a secret.
    await accounts.setModel(project.id, {
      provider: 'bedrock',
      model: 'amazon.nova-lite-v1:0',
      settings: { region: 'us-east-1' },
      apiKey: 'ABSKbedrock-api-key',
    });
    expect(await accounts.modelCredentials(project.id)).toMatchObject({
      apiKey: 'ABSKbedrock-api-key',
      awsCredentials: null,
    });
    await accounts.setModel(project.id, {
      provider: 'azure-openai',
      model: 'gpt4o-deployment',
      settings: { resourceName: 'acme', apiVersion: 'v1' },
      apiKey: 'azure-key',
    });
    expect(await accounts.modelConfig(project.id)).toEqual({
      provider: 'azure-openai',
      model: 'gpt4o-deployment',
      baseUrl: null,
      settings: { resourceName: 'acme', apiVersion: 'v1' },
      hasKey: true,
    });
  });

  it('authenticates a key until it is revoked', async () => {
    const project = await accounts.createProject({ name: uniqueName(), plan: 'starter' });
    const { key, record } = await accounts.createApiKey(project.id);
    expect((await accounts.authenticate(key))?.project.id).toBe(project.id);
    await accounts.revokeApiKey(record.id);
    expect(await accounts.authenticate(key)).toBeNull();
  });

  it("counts a request's hit on the rate limit with its key's lookup, and never for a revoked, unknown or malformed key", async () => {
    const project = await accounts.createProject({ name: uniqueName(), plan: 'pro', capabilities: ['chat'] });
    const { key, record } = await accounts.createApiKey(project.id);
    const hitsOf = async (): Promise<number> =>
      Number(
        (
          (await db.query(`select count(*) as n from rate_limit_hits where project_id = $1`, [project.id])) as {
            n: string;
          }[]
        )[0]!.n,
      );

    const first = await accounts.authenticateRequest(key);
    expect(first?.principal).toMatchObject({
      keyId: record.id,
      project: { id: project.id, plan: 'pro', capabilities: ['chat'], creditBalance: 0, requestsUsed: 0 },
    });
    expect(first?.principal.project.periodStart).toBeInstanceOf(Date);
    expect(first?.hits).toEqual({ count: 0, retryAfterSeconds: 0 });
    const second = await accounts.authenticateRequest(key);
    expect(second?.hits.count).toBe(1);
    expect(await hitsOf()).toBe(2);

    await accounts.revokeApiKey(record.id);
    expect(await accounts.authenticateRequest(key)).toBeNull();
    expect(await accounts.authenticateRequest(`${key.slice(0, -1)}${key.endsWith('a') ? 'b' : 'a'}`)).toBeNull();
    expect(await accounts.authenticateRequest('not a key')).toBeNull();
    expect(await hitsOf()).toBe(2);
  });

  it('refuses bad operator input with a clear message', async () => {
    const name = uniqueName();
    await accounts.createProject({ name, plan: 'free' });
    await expect(accounts.createProject({ name, plan: 'free' })).rejects.toThrow(
      new AccountsError(`a project named "${name}" already exists`),
    );
    await expect(accounts.setPlan(name, 'gold')).rejects.toThrow('unknown plan "gold"');
    await expect(accounts.setCapabilities(name, 'enable', ['teleport'])).rejects.toThrow(
      'unknown capabilities: teleport',
    );
    await expect(accounts.addCredits(name, -5)).rejects.toThrow('positive integer');
    await expect(accounts.setModel(name, { provider: 'openai', model: 'x' })).rejects.toThrow('needs a model key');
    await expect(
      accounts.setModel(name, {
        provider: 'bedrock',
        model: 'x',
        settings: { region: 'us-east-1' },
        apiKey: 'k',
        awsCredentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      }),
    ).rejects.toThrow('not both');
    await expect(accounts.setModel(name, { provider: 'gemini', model: 'x', apiKey: 'k' })).rejects.toThrow(
      'unknown provider "gemini" (providers: openai, anthropic, google, mistral, azure-openai, bedrock, scripted)',
    );
    await expect(accounts.findProject('no-such-project')).rejects.toThrow('no project "no-such-project"');
  });

  it('keeps the stored model key only while the provider and the base URL stay the same (DESIGN.md section 11)', async () => {
    const project = await accounts.createProject({ name: uniqueName(), plan: 'free' });
    const key = 'sk-owner-key-0123456789';
    const keyOf = async () => (await accounts.modelCredentials(project.id))?.apiKey ?? null;
    await accounts.setModel(project.id, {
      provider: 'openai',
      model: 'llama3',
      baseUrl: 'https://models.example/v1',
      apiKey: key,
    });
    // The model name changes, nothing else: the key left empty is kept.
    await accounts.setModel(project.id, {
      provider: 'openai',
      model: 'llama3.1',
      baseUrl: 'https://models.example/v1',
      keepSecret: true,
    });
    expect(await keyOf()).toBe(key);

    // A new base URL with no new key: the old key does not follow it to the new host.
    await expect(
      accounts.setModel(project.id, {
        provider: 'openai',
        model: 'llama3.1',
        baseUrl: 'http://elsewhere.example/v1',
        keepSecret: true,
      }),
    ).resolves.toMatchObject({ baseUrl: 'http://elsewhere.example/v1', hasKey: false });
    expect(await keyOf()).toBeNull();

    // Back on a provider's own API with a key, then another provider without one: a clear error, and the key is gone.
    await accounts.setModel(project.id, { provider: 'mistral', model: 'mistral-small', apiKey: key });
    await expect(
      accounts.setModel(project.id, { provider: 'anthropic', model: 'claude', keepSecret: true }),
    ).rejects.toThrow(
      new AccountsError(
        'provider "anthropic" needs a model key (or a base URL of a server that needs none); the stored key is not kept when the provider, the base URL or the resource changes: give it again',
      ),
    );
    await expect(
      accounts.setModel(project.id, {
        provider: 'openai',
        model: 'llama3',
        baseUrl: 'https://models.example/v1',
        keepSecret: true,
      }),
    ).resolves.toMatchObject({ provider: 'openai', hasKey: false });
    expect(await keyOf()).toBeNull();
  });

  it('marks a project that bought credits', async () => {
    const project = await accounts.createProject({ name: uniqueName(), plan: 'free' });
    expect(project.creditsPurchased).toBe(false);
    const after = await accounts.addCredits(project.id, 25);
    expect(after).toMatchObject({ creditBalance: 25, creditsPurchased: true });
  });

  it('never writes back a stale balance when the plan or capabilities change during charges', async () => {
    const project = await accounts.createProject({ name: uniqueName(), plan: 'pro' });
    // Operators change the plan and capabilities while credits move (as charges do in a run).
    await Promise.all([
      ...Array.from({ length: 20 }, () => accounts.addCredits(project.id, 1)),
      ...Array.from({ length: 10 }, (_, i) =>
        accounts.setCapabilities(project.id, i % 2 ? 'enable' : 'disable', ['code']),
      ),
      ...Array.from({ length: 10 }, (_, i) => accounts.setPlan(project.id, i % 2 ? 'pro' : 'starter')),
    ]);
    expect((await accounts.findProject(project.id)).creditBalance).toBe(20);
  });
});
