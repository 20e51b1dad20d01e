import { randomBytes } from 'node:crypto';
import { EventStore } from '#libs/events';
import { WebhookStore } from '#libs/webhooks';
import { runCli, type CliIo } from '../../apps/cli/src/cli.js';
import { testConfig } from '../support/config.js';
import { Fixtures } from '../support/fixtures.js';
import { AccountsService, decryptSecret } from '#libs/accounts';

const config = testConfig();

async function cli(args: string, cfg: typeof config): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CliIo = { out: (s) => void (out += s), err: (s) => void (err += s), readStdin: async () => '', env: {} };
  const code = await runCli(args.split(' '), cfg, io);
  return { code, out, err };
}

/** Issue 28: the master key and the API-key pepper could not be rotated. Each is rotated here over
 * real PostgreSQL, through the services and the operator CLI, as docs/operations.md says. */
describe('secret rotation', () => {
  let fixtures: Fixtures;
  beforeAll(async () => {
    fixtures = await Fixtures.open(config);
  });
  afterAll(async () => {
    await fixtures?.close();
  });

  it('rotates the master key: old secrets stay readable, re-encrypt moves them, the old key goes', async () => {
    const oldKey = config.masterKey;
    const newKey = randomBytes(32);
    const before = new AccountsService(fixtures.db, config, new EventStore());
    const { project } = await fixtures.project({ model: null });
    await before.setModel(project.id, { provider: 'openai', model: 'gpt-4o-mini', apiKey: 'sk-model-secret' });
    const webhook = await new WebhookStore(fixtures.db, config).add(project.id, {
      url: 'https://hooks.example.com/in',
    });

    // Step 2 of the procedure: the new key writes, the old one is still read.
    const rotated = { ...config, masterKey: newKey, previousMasterKeys: [oldKey] };
    const during = new AccountsService(fixtures.db, rotated, new EventStore());
    expect((await during.modelCredentials(project.id))?.apiKey).toBe('sk-model-secret');

    const reencrypt = await cli('secrets reencrypt --json', rotated);
    expect(reencrypt.code).toBe(0);
    const report = JSON.parse(reencrypt.out) as { tables: Record<string, { reencrypted: number; unreadable: number }> };
    expect(report.tables.model_configs!.reencrypted).toBeGreaterThanOrEqual(1);
    expect(report.tables.webhook_subscriptions!.reencrypted).toBeGreaterThanOrEqual(1);
    expect(Object.values(report.tables).map((t) => t.unreadable)).toEqual([0, 0, 0]);

    // Step 4: the old key removed; everything is read under the new one alone.
    const retired = { ...config, masterKey: newKey, previousMasterKeys: [] };
    expect(
      (await new AccountsService(fixtures.db, retired, new EventStore()).modelCredentials(project.id))?.apiKey,
    ).toBe('sk-model-secret');
    const [row] = (await fixtures.db.query(`select secret_ciphertext from webhook_subscriptions where id = $1`, [
      webhook.subscription.id,
    ])) as [{ secret_ciphertext: Buffer }];
    expect(decryptSecret(row.secret_ciphertext, newKey, `webhook-subscription:${webhook.subscription.id}`)).toBe(
      webhook.secret,
    );
    expect(() =>
      decryptSecret(row.secret_ciphertext, oldKey, `webhook-subscription:${webhook.subscription.id}`),
    ).toThrow();
    // A run of the command with a key missing says so and fails.
    expect(
      (await cli('secrets reencrypt', { ...config, masterKey: randomBytes(32), previousMasterKeys: [] })).code,
    ).toBe(1);

    // Back to the environment's key (the other tests of this database read with it): a second rotation.
    expect((await cli('secrets reencrypt', { ...config, masterKey: oldKey, previousMasterKeys: [newKey] })).code).toBe(
      0,
    );
    expect((await before.modelCredentials(project.id))?.apiKey).toBe('sk-model-secret');
  });

  it('rotates the API-key pepper: a key stored under the old one authenticates and is stored again under the new one', async () => {
    const oldPepper = config.apiKeyPepper;
    const newPepper = randomBytes(32);
    const { key: used } = await fixtures.project();
    const { key: unused } = await fixtures.project();

    const rotated = new AccountsService(
      fixtures.db,
      { ...config, apiKeyPepper: newPepper, previousApiKeyPeppers: [oldPepper] },
      new EventStore(),
    );
    expect(await rotated.authenticateRequest(used)).not.toBeNull();
    // New keys are stored under the new pepper.
    const { project: fresh } = await fixtures.project();
    const { key: newKey } = await rotated.createApiKey(fresh.id, 'after rotation');

    const retired = new AccountsService(
      fixtures.db,
      { ...config, apiKeyPepper: newPepper, previousApiKeyPeppers: [] },
      new EventStore(),
    );
    expect(await retired.authenticateRequest(used)).not.toBeNull();
    expect(await retired.authenticateRequest(newKey)).not.toBeNull();
    // A key not used since the rotation is still under the old pepper: why the procedure waits
    // until every active key was used or revoked before removing it.
    expect(await retired.authenticateRequest(unused)).toBeNull();
    expect(await rotated.authenticateRequest(unused)).not.toBeNull();
  });
});
