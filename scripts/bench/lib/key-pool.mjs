// Bench projects and their API keys. The api allows 60 requests per sliding minute per project
// (RATE_LIMIT_PER_MINUTE in libs/metering, a constant of the contract, not configurable), so load
// is spread over many projects: a key is handed out only while its project has fewer than
// LIMIT requests in the last WINDOW, counted here at send time with a margin.
//
// Projects beyond the first (which run.sh creates with the operator CLI) are created through the
// same AccountsService the CLI's `project create`, `project set-model` and `key create` commands
// call: three CLI processes per project take ~3 s, and a full run needs a few hundred projects.
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { AccountsService } from '#libs/accounts';
import { loadConfig } from '#libs/config';
import { EventStore } from '#libs/events';
import { dataSourceOptions } from '#libs/persistence';

const LIMIT = 50;
const WINDOW_MS = 62_000;
const CREDITS = 100_000_000;

/** The operator-side handle: one DataSource for all pools. */
export async function openAccounts(env = process.env) {
  const config = loadConfig(env);
  const db = new DataSource({ ...dataSourceOptions(config), logging: ['error'], extra: { max: 4 } });
  await db.initialize();
  return { accounts: new AccountsService(db, config, new EventStore()), db, close: () => db.destroy() };
}

/** Keys of projects whose model is one model server (one latency). */
export class KeyPool {
  /**
   * @param {{ accounts: AccountsService, namePrefix: string, baseUrl: string, modelKey: string, log: (s: string) => void }} options
   */
  constructor({ accounts, namePrefix, baseUrl, modelKey, log }) {
    this.accounts = accounts;
    this.namePrefix = namePrefix;
    this.baseUrl = baseUrl;
    this.modelKey = modelKey;
    this.log = log;
    /** @type {{ key: string, projectId: string, hits: number[] }[]} */
    this.entries = [];
    this.cursor = 0;
    this.createdOnDemand = 0;
    this.creating = undefined;
  }

  /** Adds an existing project's key (the one run.sh created with the CLI). */
  add(projectId, key) {
    this.entries.push({ key, projectId, hits: [] });
  }

  /** Creates `count` more projects, a few at a time. */
  async grow(count) {
    let next = this.entries.length;
    const makeOne = async () => {
      const name = `${this.namePrefix}-${next++}`;
      const project = await this.accounts.createProject({ name, plan: 'pro', capabilities: ['chat'] });
      await this.accounts.addCredits(project.id, CREDITS);
      await this.accounts.setModel(project.id, {
        provider: 'openai',
        model: 'bench',
        baseUrl: this.baseUrl,
        apiKey: this.modelKey,
      });
      const { key } = await this.accounts.createApiKey(project.id, 'npm run bench');
      this.entries.push({ key, projectId: project.id, hits: [] });
    };
    let left = count;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (left > 0) {
          left--;
          await makeOne();
        }
      }),
    );
  }

  /**
   * A key whose project can take `requests` more requests now (e.g. 2 for a tool round), recorded
   * as used. When every project is at its limit, more are created (counted in createdOnDemand).
   */
  async take(requests = 1) {
    for (;;) {
      const t = Date.now();
      for (let tried = 0; tried < this.entries.length; tried++) {
        const entry = this.entries[this.cursor];
        this.cursor = (this.cursor + 1) % this.entries.length;
        while (entry.hits.length && entry.hits[0] < t - WINDOW_MS) entry.hits.shift();
        if (entry.hits.length + requests <= LIMIT) {
          for (let i = 0; i < requests; i++) entry.hits.push(t);
          return entry;
        }
      }
      // Everyone is at the limit: create a batch once, shared by all waiting callers.
      if (!this.creating) {
        this.createdOnDemand += 10;
        this.log(`all ${this.entries.length} ${this.namePrefix} projects are at the rate limit: creating 10 more`);
        this.creating = this.grow(10).finally(() => {
          this.creating = undefined;
        });
      }
      await this.creating;
    }
  }

  get size() {
    return this.entries.length;
  }

  get projectIds() {
    return this.entries.map((e) => e.projectId);
  }
}
