import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AccountsService } from '#libs/accounts';
import { EventStore } from '#libs/events';
import type { AppConfig } from '#libs/config';
import type { Capability, PlanName } from '#libs/contracts';
import { dataSourceOptions, type ProjectEntity } from '#libs/persistence';

/** Creates projects and keys through the same service the operator CLI uses. */
export class Fixtures {
  readonly accounts: AccountsService;
  private constructor(
    readonly db: DataSource,
    config: AppConfig,
  ) {
    this.accounts = new AccountsService(db, config, new EventStore());
  }

  static async open(config: AppConfig): Promise<Fixtures> {
    const db = new DataSource({ ...dataSourceOptions(config), logging: ['error'] });
    await db.initialize();
    return new Fixtures(db, config);
  }

  /** A project with a unique name, a key, and (by default) the scripted model and some credits. */
  async project(
    options: {
      plan?: PlanName;
      capabilities?: Capability[];
      credits?: number;
      model?: Parameters<AccountsService['setModel']>[1] | null;
    } = {},
  ): Promise<{ project: ProjectEntity; key: string; auth: { authorization: string } }> {
    let project = await this.accounts.createProject({
      name: `test-${randomUUID()}`,
      plan: options.plan ?? 'pro',
      capabilities: options.capabilities,
    });
    if (options.credits !== 0) project = await this.accounts.addCredits(project.id, options.credits ?? 100);
    if (options.model !== null)
      await this.accounts.setModel(project.id, options.model ?? { provider: 'scripted', model: 'scripted-test' });
    const { key } = await this.accounts.createApiKey(project.id, 'test');
    return { project, key, auth: { authorization: `Bearer ${key}` } };
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}
