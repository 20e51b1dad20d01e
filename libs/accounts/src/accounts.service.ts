import { randomUUID } from 'node:crypto';
import { DataSource, type EntityManager } from 'typeorm';
import {
  isCapability,
  isPlanName,
  CAPABILITIES,
  EVENT_TYPES,
  MODEL_PROVIDERS,
  type AwsCredentials,
  type Capability,
  type ModelProviderSettings,
  type Plan,
  type PlanName,
  isUuid,
} from '#libs/contracts';
import type { EventStore } from '#libs/events';
import type { AppConfig } from '#libs/config';
import { modelTargetProblem } from '#libs/llm';
import { billingAnchor } from '#libs/metering';
import {
  ApiKeyEntity,
  ModelConfigEntity,
  NotifiedCache,
  ProjectEntity,
  type ModelProvider,
  type PgListener,
} from '#libs/persistence';
import {
  decryptSecret,
  displayPrefix,
  encryptSecret,
  generateApiKey,
  hashApiKey,
  hashesEqual,
  isWellFormedApiKey,
  masterKeys,
} from './secrets.js';

/** A rule broken by an operator's request (unknown project, bad plan name, ...). */
export class AccountsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AccountsError';
  }
}

export { MODEL_PROVIDERS };

/** The fullest sliding minute of its project a request falls in (hits before it), and when a
 * refused one's retry is admitted (libs/metering's `rate_limit_hit`, migration 1763700000056). */
export interface RecentHits {
  readonly count: number;
  readonly retryAfterSeconds: number;
}

/** A valid key's row: its project's columns, the key, and (when counted) the rate-limit hit. */
interface KeyRow {
  id: string;
  name: string;
  plan: PlanName;
  capabilities: Capability[];
  credit_balance: number;
  credits_purchased: boolean;
  period_start: Date;
  requests_used: number;
  created_at: Date;
  key_id: string;
  key_hash: Buffer;
  n?: string;
  retry_after?: number;
}

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
  readonly settings: ModelProviderSettings;
  /** Whether a secret is stored: a key, or (bedrock) AWS credentials. */
  readonly hasKey: boolean;
}

/** A model configuration to set; the secrets come from the operator's environment or stdin, never argv. */
export interface ModelConfigInput {
  readonly provider: string;
  readonly model: string;
  readonly baseUrl?: string | null;
  readonly settings?: ModelProviderSettings;
  readonly apiKey?: string | null;
  /** bedrock: AWS credentials for SigV4, instead of a Bedrock API key. */
  readonly awsCredentials?: AwsCredentials | null;
  /** With no key or credentials given, keep the secret stored before (the console's write-only key field left empty). */
  readonly keepSecret?: boolean;
}

/** The decrypted configuration, for the activity that calls the model and nothing else. */
export interface ModelCredentials {
  readonly provider: ModelProvider;
  readonly model: string;
  readonly baseUrl: string | null;
  readonly settings: ModelProviderSettings;
  readonly apiKey: string | null;
  readonly awsCredentials: AwsCredentials | null;
  /** The operator's MODEL_ALLOW_HOSTS: the non-public hosts the base URL may be on (the call is held to it). */
  readonly allowHosts: readonly string[];
}

/** The channels the writes of API keys and model configurations notify on (migration 1763700000048). */
export const API_KEY_CHANNEL = 'mas_api_key';
export const MODEL_CONFIG_CHANNEL = 'mas_model_config';

/** Bounds of each cache: entries, and the age at which one is read again whatever was heard. */
export const CREDENTIAL_CACHE_LIMITS = { maxEntries: 10_000, ttlMs: 5 * 60_000 } as const;

/** What the key cache keeps: which key and project a presented key's hash is (its project's
 * figures are read with every request's rate-limit hit). */
interface CachedKey {
  readonly keyId: string;
  readonly projectId: string;
}

export interface NewProject {
  readonly name: string;
  readonly plan: PlanName;
  /** Defaults to every capability the plan allows. */
  readonly capabilities?: readonly Capability[];
}

/** Projects, plans, credits, API keys and model configuration. */
export class AccountsService {
  private keys: NotifiedCache<CachedKey> | undefined;
  private models: NotifiedCache<ModelConfigEntity> | undefined;

  /** With `listener` (the process's one, in the apps), API keys and model credentials are cached
   * while it hears their writes (DESIGN.md section 10 "caches"), each cache made on its first use
   * (the api keeps keys, the worker credentials); without it (the CLI) every read goes to PostgreSQL. */
  constructor(
    private readonly db: DataSource,
    private readonly config: Pick<AppConfig, 'plans' | 'masterKey' | 'apiKeyPepper'> &
      Partial<Pick<AppConfig, 'previousMasterKeys' | 'previousApiKeyPeppers' | 'modelAllowHosts'>>,
    private readonly events: EventStore,
    private readonly listener?: PgListener,
  ) {}

  /** The caches made so far (tests and measurements read their state). */
  get caches(): { readonly keys?: NotifiedCache<CachedKey>; readonly models?: NotifiedCache<ModelConfigEntity> } {
    return { ...(this.keys ? { keys: this.keys } : {}), ...(this.models ? { models: this.models } : {}) };
  }

  /** Stops hearing the channels and drops what was cached. */
  closeCaches(): void {
    this.keys?.close();
    this.models?.close();
    this.keys = this.models = undefined;
  }

  plan(name: PlanName): Plan {
    return this.config.plans[name];
  }

  async createProject(input: NewProject): Promise<ProjectEntity> {
    if (!input.name.trim()) throw new AccountsError('a project needs a name');
    if (!isPlanName(input.plan))
      throw new AccountsError(`unknown plan "${String(input.plan)}" (plans: free, starter, pro)`);
    const capabilities = input.capabilities ?? this.plan(input.plan).capabilities;
    this.assertCapabilities(capabilities);
    const repo = this.db.getRepository(ProjectEntity);
    if (await repo.existsBy({ name: input.name }))
      throw new AccountsError(`a project named "${input.name}" already exists`);
    return repo.save(
      repo.create({
        id: randomUUID(),
        name: input.name,
        plan: input.plan,
        capabilities: [...new Set(capabilities)],
        creditBalance: 0,
        creditsPurchased: false,
        periodStart: billingAnchor(new Date()),
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
      const [row] = (await tx.query(`select plan from projects where id = $1 for update`, [id])) as {
        plan: PlanName;
      }[];
      await tx.query(`update projects set plan = $2 where id = $1`, [id, plan]);
      await this.events.append(tx, `project-${id}`, 'any', [
        {
          eventId: randomUUID(),
          type: EVENT_TYPES.projectPlanChanged,
          data: { from: row?.plan, to: plan },
          metadata: { projectId: id, correlationId: id, causationId: id },
        },
      ]);
    });
    return this.findProject(id);
  }

  /** Enables or disables capabilities; like setPlan, writes only its own column under the row lock. */
  async setCapabilities(
    ref: string,
    change: 'enable' | 'disable',
    capabilities: readonly string[],
  ): Promise<ProjectEntity> {
    this.assertCapabilities(capabilities);
    const { id } = await this.findProject(ref);
    await this.db.transaction(async (tx) => {
      const [row] = (await tx.query(`select capabilities from projects where id = $1 for update`, [id])) as {
        capabilities: Capability[];
      }[];
      const current = new Set(row?.capabilities ?? []);
      for (const c of capabilities as Capability[]) {
        if (change === 'enable') current.add(c);
        else current.delete(c);
      }
      await tx.query(`update projects set capabilities = $2 where id = $1`, [
        id,
        CAPABILITIES.filter((c) => current.has(c)),
      ]);
    });
    return this.findProject(id);
  }

  /** Adds purchased credits; a project that ever bought credits may open sessions. */
  async addCredits(ref: string, amount: number): Promise<ProjectEntity> {
    if (!Number.isInteger(amount) || amount <= 0) throw new AccountsError('credits to add must be a positive integer');
    const project = await this.findProject(ref);
    await this.db.transaction(async (tx) => {
      // The row lock taken by the update serialises writers of the project stream.
      const [rows] = (await tx.query(
        `update projects set credit_balance = credit_balance + $2, credits_purchased = true where id = $1 returning credit_balance`,
        [project.id, amount],
      )) as [{ credit_balance: number }[], number];
      await this.events.append(tx, `project-${project.id}`, 'any', [
        {
          eventId: randomUUID(),
          type: EVENT_TYPES.projectCreditsAdded,
          data: { credits: amount, balance: rows[0]?.credit_balance },
          metadata: { projectId: project.id, correlationId: project.id, causationId: project.id },
        },
      ]);
    });
    return this.findProject(project.id);
  }

  /** Sets the project's model; the provider's own settings are checked here, so a call never finds
   * them wrong. A stored secret is kept (`keepSecret`) only while it would go where it went before:
   * a new provider, base URL or Azure resource drops it, and it must be given again (DESIGN.md
   * section 11), so nobody who may edit the settings can aim the owner's key at a host of their own. */
  async setModel(ref: string, input: ModelConfigInput): Promise<ModelConfigView> {
    const settings = definedOnly(input.settings ?? {});
    const aws = input.awsCredentials ?? null;
    const project = await this.findProject(ref);
    const before =
      input.keepSecret && !input.apiKey && !aws
        ? await this.db.getRepository(ModelConfigEntity).findOneBy({ projectId: project.id })
        : null;
    const sameDestination =
      before !== null &&
      before.provider === input.provider &&
      (before.baseUrl ?? null) === (input.baseUrl || null) &&
      (before.settings.resourceName ?? null) === (settings.resourceName ?? null);
    const kept = sameDestination ? before.keyCiphertext : null;
    const dropped = before?.keyCiphertext != null && !sameDestination;
    const keptCredentials =
      kept && input.provider === 'bedrock' && decryptSecret(kept, masterKeys(this.config), project.id).startsWith('{');
    const problem = modelTargetProblem({
      provider: input.provider,
      model: input.model,
      baseUrl: input.baseUrl ?? null,
      settings,
      hasKey: !!input.apiKey || (!!kept && !keptCredentials),
      hasAwsCredentials: aws !== null || !!keptCredentials,
    });
    if (problem && dropped)
      throw new AccountsError(
        `${problem}; the stored key is not kept when the provider, the base URL or the resource changes: give it again`,
      );
    if (problem) throw new AccountsError(problem);
    if (aws && (!aws.accessKeyId || !aws.secretAccessKey))
      throw new AccountsError('AWS credentials need an access key id and a secret access key');
    // AWS credentials are sealed as one JSON secret; a key as itself (rows written before stay readable).
    const secret = aws
      ? JSON.stringify({
          accessKeyId: aws.accessKeyId,
          secretAccessKey: aws.secretAccessKey,
          ...(aws.sessionToken ? { sessionToken: aws.sessionToken } : {}),
        })
      : input.apiKey || null;
    const repo = this.db.getRepository(ModelConfigEntity);
    await repo.save(
      repo.create({
        projectId: project.id,
        provider: input.provider as ModelProvider,
        model: input.model.trim(),
        baseUrl: input.baseUrl || null,
        settings,
        keyCiphertext: secret ? encryptSecret(secret, this.config.masterKey, project.id) : kept,
      }),
    );
    return this.modelConfig(project.id) as Promise<ModelConfigView>;
  }

  async modelConfig(projectId: string): Promise<ModelConfigView | null> {
    const row = await this.db.getRepository(ModelConfigEntity).findOneBy({ projectId });
    return (
      row && {
        provider: row.provider,
        model: row.model,
        baseUrl: row.baseUrl,
        settings: row.settings,
        hasKey: row.keyCiphertext !== null,
      }
    );
  }

  /** Decrypts the model's secret. Call only where the model is called (inside the activity). The
   * row is cached sealed (decrypted on each call, so no plaintext key lives on in memory). */
  async modelCredentials(projectId: string): Promise<ModelCredentials | null> {
    const read = () => this.db.getRepository(ModelConfigEntity).findOneBy({ projectId });
    if (this.listener)
      this.models ??= new NotifiedCache(this.listener, {
        channel: MODEL_CONFIG_CHANNEL,
        ...CREDENTIAL_CACHE_LIMITS,
        tagOf: (row) => row.projectId,
      });
    const row = this.models ? await this.models.get(projectId, read) : await read();
    if (!row) return null;
    const secret = row.keyCiphertext ? decryptSecret(row.keyCiphertext, masterKeys(this.config), projectId) : null;
    // Bedrock API keys never start with "{": a JSON secret is a set of AWS credentials.
    const aws = row.provider === 'bedrock' && secret?.startsWith('{') ? (JSON.parse(secret) as AwsCredentials) : null;
    return {
      provider: row.provider,
      model: row.model,
      baseUrl: row.baseUrl,
      settings: row.settings,
      apiKey: aws ? null : secret,
      awsCredentials: aws,
      allowHosts: this.config.modelAllowHosts ?? [],
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

  /** Revokes a key by id; it is refused within a second on every api replica (their key caches
   * hear the revocation, migration 1763700000048), from the next request where none caches. With
   * `projectId`, only a key of that project (the console's callers may name any id). */
  async revokeApiKey(keyId: string, projectId?: string): Promise<ApiKeyEntity> {
    if (!isUuid(keyId)) throw new AccountsError(`no API key "${keyId}"`);
    const repo = this.db.getRepository(ApiKeyEntity);
    const key = await repo.findOneBy(projectId ? { id: keyId, projectId } : { id: keyId });
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
    return (await this.lookUpKey(presented, false))?.principal ?? null;
  }

  /** `authenticate` as every /v1 request needs it: for a valid key, in the same round trip, its
   * project's hit on the per-minute rate limit (libs/metering's `rate_limit_hit` function counts
   * it and answers the hits before it; libs/metering's `rateLimitVerdict` decides). */
  async authenticateRequest(presented: string): Promise<{ principal: Principal; hits: RecentHits } | null> {
    const found = await this.lookUpKey(presented, true);
    return (
      found && {
        principal: found.principal,
        hits: { count: Number(found.row.n), retryAfterSeconds: found.row.retry_after ?? 0 },
      }
    );
  }

  /** The key, its project and optionally the rate-limit hit, in one statement (it runs before
   * every request): a revoked or unknown key finds no row, so it is not counted. A key found
   * before is taken from the cache, and the statement reads only its project and the hit. */
  private async lookUpKey(
    presented: string,
    hit: boolean,
  ): Promise<{ principal: Principal; row: Pick<KeyRow, 'n' | 'retry_after'> } | null> {
    if (!isWellFormedApiKey(presented)) return null;
    const hash = hashApiKey(presented, this.config.apiKeyPepper);
    if (!this.listener) return this.readKey(presented, hash, hit);
    this.keys ??= new NotifiedCache(this.listener, {
      channel: API_KEY_CHANNEL,
      ...CREDENTIAL_CACHE_LIMITS,
      tagOf: (key) => key.keyId,
    });
    let read: { principal: Principal; row: Pick<KeyRow, 'n' | 'retry_after'> } | null | undefined;
    const key = await this.keys.get(hash.toString('hex'), async () => {
      read = await this.readKey(presented, hash, hit);
      return read && { keyId: read.principal.keyId, projectId: read.principal.project.id };
    });
    if (read !== undefined || !key) return read ?? null;
    const rows: Omit<KeyRow, 'key_hash'>[] = await this.db.query(
      `${hit ? `with used as (update api_keys set last_used_at = now() where id = $2 and revoked_at is null and (last_used_at is null or last_used_at < now() - interval '1 minute') returning id) ` : ''}
       select p.id, p.name, p.plan, p.capabilities, p.credit_balance, p.credits_purchased, p.period_start, p.requests_used, p.created_at, $2::uuid as key_id
              ${hit ? ', hit.n, hit.retry_after' : ''}
         from projects p ${hit ? 'cross join lateral rate_limit_hit(p.id::text) hit' : ''}
        where p.id = $1`,
      [key.projectId, key.keyId],
    );
    return rows[0] ? principalOf(rows[0]) : null;
  }

  private async readKey(
    presented: string,
    hash: Buffer,
    hit: boolean,
  ): Promise<{ principal: Principal; row: Pick<KeyRow, 'n' | 'retry_after'> } | null> {
    // A key stored under a pepper being retired is found by its hash under that pepper.
    const hashes = [hash, ...(this.config.previousApiKeyPeppers ?? []).map((pepper) => hashApiKey(presented, pepper))];
    // A counted request also stamps the key's last use, at most once a minute (a row lock then
    // only at the minute's first request), in the same statement: no extra round trip.
    const rows: KeyRow[] = await this.db.query(
      `${hit ? `with used as (update api_keys set last_used_at = now() where key_hash = any($1::bytea[]) and revoked_at is null and (last_used_at is null or last_used_at < now() - interval '1 minute') returning id) ` : ''}
       select p.id, p.name, p.plan, p.capabilities, p.credit_balance, p.credits_purchased, p.period_start, p.requests_used, p.created_at, k.id as key_id, k.key_hash
              ${hit ? ', hit.n, hit.retry_after' : ''}
         from api_keys k join projects p on p.id = k.project_id ${hit ? 'cross join lateral rate_limit_hit(p.id::text) hit' : ''}
        where k.key_hash = any($1::bytea[]) and k.revoked_at is null`,
      [hashes],
    );
    const row = rows[0];
    if (!row || !hashes.some((h) => hashesEqual(row.key_hash, h))) return null;
    if (!hashesEqual(row.key_hash, hash)) {
      // Stored again under the current pepper: once every key was used (or revoked), the old
      // pepper can go (docs/operations.md).
      await this.db.query(`update api_keys set key_hash = $1 where id = $2 and key_hash = $3`, [
        hash,
        row.key_id,
        row.key_hash,
      ]);
    }
    return principalOf(row);
  }

  private assertCapabilities(capabilities: readonly unknown[]): void {
    const unknown = capabilities.filter((c) => !isCapability(c));
    if (unknown.length)
      throw new AccountsError(`unknown capabilities: ${unknown.join(', ')} (valid: ${CAPABILITIES.join(', ')})`);
  }
}

function principalOf(row: Omit<KeyRow, 'key_hash'>): { principal: Principal; row: Pick<KeyRow, 'n' | 'retry_after'> } {
  const project = Object.assign(new ProjectEntity(), {
    id: row.id,
    name: row.name,
    plan: row.plan,
    capabilities: row.capabilities,
    creditBalance: row.credit_balance,
    creditsPurchased: row.credits_purchased,
    periodStart: row.period_start,
    requestsUsed: row.requests_used,
    createdAt: row.created_at,
  });
  return { principal: { keyId: row.key_id, project }, row };
}

function definedOnly(settings: ModelProviderSettings): ModelProviderSettings {
  return Object.fromEntries(
    Object.entries(settings).filter(([, v]) => v !== undefined && v !== ''),
  ) as ModelProviderSettings;
}
