import { randomUUID } from 'node:crypto';
import { DataSource, type EntityManager } from 'typeorm';
import { isCapability, isPlanName, CAPABILITIES, EVENT_TYPES, type Capability, type Plan, type PlanName, isUuid } from '#libs/contracts';
import type { EventStore } from '#libs/events';
import type { AppConfig } from '#libs/config';
import { ApiKeyEntity, ModelConfigEntity, ProjectEntity, type ModelProvider } from '#libs/persistence';
import { decryptSecret, displayPrefix, encryptSecret, generateApiKey, hashApiKey, hashesEqual, isWellFormedApiKey } from './secrets.js';

/** A rule broken by an operator's request (unknown project, bad plan name, ...). */
export class AccountsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AccountsError';
  }
}

export const MODEL_PROVIDERS: readonly ModelProvider[] = ['openai', 'anthropic', 'scripted'];

/** Who a valid API key speaks for. */
export interface Principal {
  readonly keyId: string;
  readonly project: ProjectEntity;
}

/** A project's model configuration as an operator may see it: never the key itself. */
export interface ModelConfigView {
  readonly provider: ModelProvider;
  readonly model: string;
  readonly baseUrl: string | null;
  readonly hasKey: boolean;
}

/** The decrypted configuration, for the activity that calls the model and nothing else. */
export interface ModelCredentials {
  readonly provider: ModelProvider;
  readonly model: string;
  readonly baseUrl: string | null;
  readonly apiKey: string | null;
}

export interface NewProject {
  readonly name: string;
  readonly plan: PlanName;
  /** Defaults to every capability the plan allows. */
  readonly capabilities?: readonly Capability[];
}


/** Projects, plans, credits, API keys and model configuration. */
export class AccountsService {
  constructor(
    private readonly db: DataSource,
    private readonly config: Pick<AppConfig, 'plans' | 'masterKey' | 'apiKeyPepper'>,
    private readonly events: EventStore,
  ) {}

  plan(name: PlanName): Plan {
    return this.config.plans[name];
  }

  async createProject(input: NewProject): Promise<ProjectEntity> {
    if (!input.name.trim()) throw new AccountsError('a project needs a name');
    if (!isPlanName(input.plan)) throw new AccountsError(`unknown plan "${String(input.plan)}" (plans: free, starter, pro)`);
    const capabilities = input.capabilities ?? this.plan(input.plan).capabilities;
    this.assertCapabilities(capabilities);
    const repo = this.db.getRepository(ProjectEntity);
    if (await repo.existsBy({ name: input.name })) throw new AccountsError(`a project named "${input.name}" already exists`);
    return repo.save(
      repo.create({
        id: randomUUID(),
        name: input.name,
        plan: input.plan,
        capabilities: [...new Set(capabilities)],
        creditBalance: 0,
        creditsPurchased: false,
        periodStart: startOfPeriod(new Date()),
      }),
    );
  }

  /** A project by id or by name. */
  async findProject(ref: string, manager: EntityManager = this.db.manager): Promise<ProjectEntity> {
    const repo = manager.getRepository(ProjectEntity);
    const project = isUuid(ref) ? await repo.findOneBy({ id: ref }) : await repo.findOneBy({ name: ref });
    if (!project) throw new AccountsError(`no project "${ref}"`);
    return project;
  }

  async listProjects(): Promise<ProjectEntity[]> {
    return this.db.getRepository(ProjectEntity).find({ order: { createdAt: 'ASC' } });
  }

  /** Changes the plan. Only the plan column is written, under the row lock, so a concurrent
   * charge's balance is never overwritten with the value read before it. */
  async setPlan(ref: string, plan: string): Promise<ProjectEntity> {
    if (!isPlanName(plan)) throw new AccountsError(`unknown plan "${plan}" (plans: free, starter, pro)`);
    const { id } = await this.findProject(ref);
    await this.db.transaction(async (tx) => {
      const [row] = (await tx.query(`select plan from projects where id = $1 for update`, [id])) as { plan: PlanName }[];
      await tx.query(`update projects set plan = $2 where id = $1`, [id, plan]);
      await this.events.append(tx, `project-${id}`, 'any', [
        { eventId: randomUUID(), type: EVENT_TYPES.projectPlanChanged, data: { from: row?.plan, to: plan }, metadata: { projectId: id, correlationId: id, causationId: id } },
      ]);
    });
    return this.findProject(id);
  }

  /** Enables or disables capabilities; like setPlan, writes only its own column under the row lock. */
  async setCapabilities(ref: string, change: 'enable' | 'disable', capabilities: readonly string[]): Promise<ProjectEntity> {
    this.assertCapabilities(capabilities);
    const { id } = await this.findProject(ref);
    await this.db.transaction(async (tx) => {
      const [row] = (await tx.query(`select capabilities from projects where id = $1 for update`, [id])) as { capabilities: Capability[] }[];
      const current = new Set(row?.capabilities ?? []);
      for (const c of capabilities as Capability[]) {
        if (change === 'enable') current.add(c);
        else current.delete(c);
      }
      await tx.query(`update projects set capabilities = $2 where id = $1`, [id, CAPABILITIES.filter((c) => current.has(c))]);
    });
    return this.findProject(id);
  }

  /** Adds purchased credits; a project that ever bought credits may open sessions. */
  async addCredits(ref: string, amount: number): Promise<ProjectEntity> {
    if (!Number.isInteger(amount) || amount <= 0) throw new AccountsError('credits to add must be a positive integer');
    const project = await this.findProject(ref);
    await this.db.transaction(async (tx) => {
      // The row lock taken by the update serialises writers of the project stream.
      const [rows] = (await tx.query(`update projects set credit_balance = credit_balance + $2, credits_purchased = true where id = $1 returning credit_balance`, [project.id, amount])) as [{ credit_balance: number }[], number];
      await this.events.append(tx, `project-${project.id}`, 'any', [
        { eventId: randomUUID(), type: EVENT_TYPES.projectCreditsAdded, data: { credits: amount, balance: rows[0]?.credit_balance }, metadata: { projectId: project.id, correlationId: project.id, causationId: project.id } },
      ]);
    });
    return this.findProject(project.id);
  }

  async setModel(ref: string, input: { provider: string; model: string; baseUrl?: string | null; apiKey?: string | null }): Promise<ModelConfigView> {
    if (!(MODEL_PROVIDERS as readonly string[]).includes(input.provider)) {
      throw new AccountsError(`unknown provider "${input.provider}" (providers: ${MODEL_PROVIDERS.join(', ')})`);
    }
    if (!input.model.trim()) throw new AccountsError('a model name is required');
    if (input.baseUrl) {
      let url: URL;
      try {
        url = new URL(input.baseUrl);
      } catch {
        throw new AccountsError(`base URL "${input.baseUrl}" is not a URL`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AccountsError('base URL must be http or https');
    }
    if (input.provider !== 'scripted' && !input.apiKey && !input.baseUrl) {
      throw new AccountsError(`provider "${input.provider}" needs a model key (or a base URL of a server that needs none)`);
    }
    const project = await this.findProject(ref);
    const repo = this.db.getRepository(ModelConfigEntity);
    await repo.save(
      repo.create({
        projectId: project.id,
        provider: input.provider as ModelProvider,
        model: input.model.trim(),
        baseUrl: input.baseUrl ?? null,
        keyCiphertext: input.apiKey ? encryptSecret(input.apiKey, this.config.masterKey, project.id) : null,
      }),
    );
    return this.modelConfig(project.id) as Promise<ModelConfigView>;
  }

  async modelConfig(projectId: string): Promise<ModelConfigView | null> {
    const row = await this.db.getRepository(ModelConfigEntity).findOneBy({ projectId });
    return row && { provider: row.provider, model: row.model, baseUrl: row.baseUrl, hasKey: row.keyCiphertext !== null };
  }

  /** Decrypts the model key. Call only where the model is called (inside the activity). */
  async modelCredentials(projectId: string): Promise<ModelCredentials | null> {
    const row = await this.db.getRepository(ModelConfigEntity).findOneBy({ projectId });
    if (!row) return null;
    return {
      provider: row.provider,
      model: row.model,
      baseUrl: row.baseUrl,
      apiKey: row.keyCiphertext ? decryptSecret(row.keyCiphertext, this.config.masterKey, projectId) : null,
    };
  }

  /** Issues a key; the full key is in the result only, never stored or shown again. */
  async createApiKey(ref: string, label?: string): Promise<{ key: string; record: ApiKeyEntity }> {
    const project = await this.findProject(ref);
    const key = generateApiKey();
    const repo = this.db.getRepository(ApiKeyEntity);
    const record = await repo.save(
      repo.create({
        id: randomUUID(),
        projectId: project.id,
        keyHash: hashApiKey(key, this.config.apiKeyPepper),
        prefix: displayPrefix(key),
        label: label ?? null,
        revokedAt: null,
      }),
    );
    return { key, record };
  }

  async listApiKeys(ref: string): Promise<ApiKeyEntity[]> {
    const project = await this.findProject(ref);
    return this.db.getRepository(ApiKeyEntity).find({ where: { projectId: project.id }, order: { createdAt: 'ASC' } });
  }

  /** Revokes a key by id; the next request with it is refused, on every api replica. */
  async revokeApiKey(keyId: string): Promise<ApiKeyEntity> {
    if (!isUuid(keyId)) throw new AccountsError(`no API key "${keyId}"`);
    const repo = this.db.getRepository(ApiKeyEntity);
    const key = await repo.findOneBy({ id: keyId });
    if (!key) throw new AccountsError(`no API key "${keyId}"`);
    if (!key.revokedAt) {
      key.revokedAt = new Date();
      await repo.save(key);
    }
    return key;
  }

  /** The project a presented key speaks for, or null for a malformed, unknown or revoked key.
   * The lookup is by the key's HMAC, so its timing depends on the hash, not on the secret. */
  async authenticate(presented: string): Promise<Principal | null> {
    if (!isWellFormedApiKey(presented)) return null;
    const hash = hashApiKey(presented, this.config.apiKeyPepper);
    const key = await this.db.getRepository(ApiKeyEntity).findOneBy({ keyHash: hash });
    if (!key || key.revokedAt !== null || !hashesEqual(key.keyHash, hash)) return null;
    const project = await this.db.getRepository(ProjectEntity).findOneBy({ id: key.projectId });
    return project && { keyId: key.id, project };
  }

  private assertCapabilities(capabilities: readonly unknown[]): void {
    const unknown = capabilities.filter((c) => !isCapability(c));
    if (unknown.length) throw new AccountsError(`unknown capabilities: ${unknown.join(', ')} (valid: ${CAPABILITIES.join(', ')})`);
  }
}

/** The billing period containing `at` for a project created at `at`: it starts that day, 00:00 UTC. */
function startOfPeriod(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
}
