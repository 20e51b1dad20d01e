import type { MigrationInterface, QueryRunner } from 'typeorm';

export class ModelProviders1763700000017 implements MigrationInterface {
  name = 'ModelProviders1763700000017';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`alter table model_configs drop constraint model_configs_provider_check`);
    await q.query(`
      alter table model_configs add constraint model_configs_provider_check
        check (provider in ('openai', 'anthropic', 'google', 'mistral', 'azure-openai', 'bedrock', 'scripted'))`);
    // The provider's own settings, none secret (region, Azure resource name and API version);
    // secrets (keys, AWS credentials) stay in key_ciphertext.
    await q.query(`alter table model_configs add column settings jsonb not null default '{}'::jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`alter table model_configs drop column settings`);
    await q.query(`delete from model_configs where provider not in ('openai', 'anthropic', 'scripted')`);
    await q.query(`alter table model_configs drop constraint model_configs_provider_check`);
    await q.query(
      `alter table model_configs add constraint model_configs_provider_check check (provider in ('openai', 'anthropic', 'scripted'))`,
    );
  }
}
