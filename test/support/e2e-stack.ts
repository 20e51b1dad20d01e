import { randomUUID } from 'node:crypto';
import type { AppConfig } from '#libs/config';
import { startApi, type RunningApi } from './api.js';
import { testConfig } from './config.js';
import { startEventPipeline } from './event-pipeline.js';
import { Fixtures } from './fixtures.js';
import { startModelServer, type ModelServer } from './model-server.js';
import { APP_CLOSE_TIMEOUT_MS, APP_START_TIMEOUT_MS, startWorker, type RunningWorker } from './worker.js';

/** What an end-to-end test file runs against: the apps in this process, over the real stack. */
export interface E2eStack {
  readonly api: RunningApi;
  readonly worker: RunningWorker;
  readonly fixtures: Fixtures;
  /** A scripted model server on loopback (openai and anthropic protocols). */
  readonly models: ModelServer;
  /** The environment the apps run with (its own task queue). */
  readonly env: Readonly<Record<string, string>>;
  readonly config: AppConfig;
}

export interface E2eStackOptions {
  /** Names the task queue, so no other worker (e.g. a running `npm start`) takes the file's requests. */
  readonly name: string;
  /** Variables for every app (e.g. TOOL_OUTPUTS_TIMEOUT_MS). */
  readonly env?: Readonly<Record<string, string>>;
  /** Variables for the worker only (e.g. a dead KAFKA_BROKERS). */
  readonly workerEnv?: Readonly<Record<string, string>>;
  /** Also run the relay and the projector (usage events on Kafka, read models). */
  readonly pipeline?: boolean;
  /** `false`: no worker, for files that need the api alone (health, the API reference, the codec
   * endpoints); `stack.worker` is then an error. Default true. */
  readonly worker?: boolean;
}

/** A member's close longer than this is reported (see afterAll). */
const SLOW_CLOSE_MS = 5000;

/**
 * Starts, in `beforeAll`, the fixtures, a model server, the worker (unless `worker: false`; and,
 * when asked, the relay and the projector) and the api, each on the file's own task queue, and stops them in `afterAll`.
 * Read the members inside tests (they exist once `beforeAll` has run).
 */
export function e2eStack(options: E2eStackOptions): E2eStack {
  const config = testConfig();
  const env: Record<string, string> = { TEMPORAL_TASK_QUEUE: `e2e-${options.name}-${randomUUID()}`, ...options.env };
  const started: { -readonly [K in 'api' | 'worker' | 'fixtures' | 'models']?: E2eStack[K] } = {};
  const closers: { readonly name: string; readonly close: () => Promise<void> }[] = [];

  beforeAll(async () => {
    const fixtures = await Fixtures.open(config);
    started.fixtures = fixtures;
    closers.push({ name: 'fixtures', close: () => fixtures.close() });
    const models = await startModelServer();
    started.models = models;
    closers.push({ name: 'model server', close: () => models.close() });
    if (options.worker !== false) {
      const worker = await startWorker({ ...env, ...options.workerEnv });
      started.worker = worker;
      closers.push({ name: 'worker', close: () => worker.close() });
    }
    if (options.pipeline) {
      const pipeline = await startEventPipeline(env);
      closers.push({ name: 'relay and projector', close: () => pipeline.close() });
    }
    const api = await startApi(env);
    started.api = api;
    closers.push({ name: 'api', close: () => api.close() });
  }, APP_START_TIMEOUT_MS);
  afterAll(async () => {
    for (const { name, close } of closers.reverse()) {
      // A close this slow has run into a wait (a Kafka group join, a Temporal shutdown): say
      // which, so that a tear-down hook that runs out of time names its culprit.
      const started = performance.now();
      const say = (what: string) => process.stderr.write(`e2e stack ${options.name}: closing the ${name} ${what}\n`);
      const slow = setTimeout(() => say(`has taken more than ${SLOW_CLOSE_MS} ms`), SLOW_CLOSE_MS);
      try {
        await close();
      } finally {
        clearTimeout(slow);
      }
      const ms = performance.now() - started;
      if (ms > SLOW_CLOSE_MS) say(`took ${Math.round(ms)} ms`);
    }
  }, APP_CLOSE_TIMEOUT_MS);

  const member = <K extends keyof typeof started>(key: K): NonNullable<(typeof started)[K]> => {
    const value = started[key];
    if (!value) throw new Error(`the e2e stack's ${String(key)} is used before beforeAll started it`);
    return value;
  };
  return {
    get api() {
      return member('api');
    },
    get worker() {
      return member('worker');
    },
    get fixtures() {
      return member('fixtures');
    },
    get models() {
      return member('models');
    },
    env,
    config,
  };
}
