import { isIP } from 'node:net';
import {
  CAPABILITIES,
  DEFAULT_CAPABILITY_SURCHARGES,
  DEFAULT_PLANS,
  isCapability,
  isPlanName,
  SESSION_LIMITS,
  type Capability,
  type Plan,
  type PlanName,
} from '#libs/contracts';
import { HostAllowList } from '#libs/egress';
import { readKafkaSecurity, readTemporalSecurity, type KafkaSecurity, type TemporalSecurity } from './engines.js';
import { readSmtpSettings, type SmtpSettings } from './smtp.js';

/** Per-project caps (DESIGN.md section 10, "one tenant cannot hurt another"), per plan. */
export interface ProjectCaps {
  /** Streams a project may hold open on one api process (`stream: true` answers and
   * GET /v1/agent/{id}/events); 429 rate_limited past it. Counted per process: each api replica
   * holds its own connections, so N replicas allow N times this. */
  readonly openStreams: number;
  /** Agent requests and session messages admitted and not yet at their first stop (open credit
   * reservations, counted in PostgreSQL, so across every api replica); 429 rate_limited past it. */
  readonly runsInFlight: number;
  /** UTF-8 bytes of input files (and stored long messages) admitted in the last 24 hours; 429
   * rate_limited past it, 413 payload_too_large for one request larger than the whole cap. */
  readonly inputBytesPerDay: number;
}

/** The caps' defaults (MAS_PLAN_CAPS overrides any of them, per plan). */
export const DEFAULT_PROJECT_CAPS: Readonly<Record<PlanName, ProjectCaps>> = {
  free: { openStreams: 10, runsInFlight: 10, inputBytesPerDay: 100 * 1024 * 1024 },
  starter: { openStreams: 50, runsInFlight: 50, inputBytesPerDay: 1024 * 1024 * 1024 },
  pro: { openStreams: 200, runsInFlight: 200, inputBytesPerDay: 10 * 1024 * 1024 * 1024 },
};

/** Thrown at start-up when the environment is missing or malforms a variable; names every one. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** Everything the apps read from the environment, parsed and validated once. */
export interface AppConfig {
  readonly port: number;
  /** How long the api and the console keep an idle client connection open
   * (HTTP_KEEP_ALIVE_TIMEOUT_MS, 65000; Node's own is 5 s): longer than the idle timeout of the
   * load balancer in front (AWS's ALB: 60 s), so that the balancer closes idle connections, never
   * the app under a request the balancer is sending on it (a 502, or a client's "socket hang up"). */
  readonly keepAliveTimeoutMs: number;
  /** The externally visible base URL of the api, used in `error.docs` links and file URLs; an
   * https URL makes the api's answers carry Strict-Transport-Security and its cookies Secure. */
  readonly publicBaseUrl: string;
  /** How many proxies in front of the api are trusted (TRUSTED_PROXY_HOPS, 0; the console's own is
   * CONSOLE_TRUSTED_PROXY_HOPS): the client's address (X-Forwarded-For) and scheme
   * (X-Forwarded-Proto) are taken from that many hops back, as Express's `trust proxy` does; 0, the
   * headers are ignored. One load balancer is 1. */
  readonly trustedProxyHops: number;
  /** The customer console (apps/console, docs/console.md): its port (CONSOLE_PORT, 3001) and the
   * base URL its users reach it at (CONSOLE_PUBLIC_URL), in the one-time links the operator CLI
   * prints; an https URL makes its cookies Secure. */
  readonly console: {
    readonly port: number;
    readonly publicUrl: string;
    /** How many reverse proxies in front of the console append to X-Forwarded-For
     * (CONSOLE_TRUSTED_PROXY_HOPS, 0): the sign-in throttle's client address is the one they saw. */
    readonly trustedProxyHops: number;
  };
  /** Where the console's one-time links are mailed (SMTP_URL, MAIL_FROM, SMTP_INSECURE; smtp.ts,
   * docs/console.md "Mail"); undefined without SMTP_URL: a new account's link is shown to the
   * inviting owner instead. */
  readonly smtp: SmtpSettings | undefined;
  readonly databaseUrl: string;
  /** Test-only hooks, off unless set: `exitAfterRecordStop` (MAS_TEST_EXIT_AFTER_RECORD_STOP=true)
   * makes the worker kill itself right after a stop is recorded (test/e2e/retried-task.e2e-spec.ts). */
  readonly testHooks: { readonly exitAfterRecordStop: boolean };
  readonly kafkaBrokers: readonly string[];
  /** Prefix of the projector's consumer groups: deployments (or a test run) sharing one Kafka
   * but not one database need their own. */
  readonly kafkaGroupPrefix: string;
  readonly temporal: {
    /** Unset: the api answers agent requests with 503 service_unavailable; the worker refuses to start. */
    readonly address: string | undefined;
    readonly namespace: string;
    readonly taskQueue: string;
    /** The bulkhead (docs/operations.md, "Long activities on workers of their own"): the task queue
     * of the long activities (a streamed or background run's model calls, built-in tools), which
     * the api names in every run it starts; unset, they run on `taskQueue` like everything else. */
    readonly longActivityTaskQueue: string | undefined;
    /** Worker: `workflows` (the task queue's workflows and activities) or `long-activities` (only
     * the activities of `longActivityTaskQueue`, no workflows). */
    readonly workerRole: 'workflows' | 'long-activities';
    readonly uiUrl: string | undefined;
    /** How long the api waits for a worker to take up a new request before 502 compute_unavailable. */
    readonly pickupTimeoutMs: number;
    /** Worker: record where each workflow promise was made, for the stack trace query the Temporal
     * UI shows for a running workflow (WORKFLOW_STACK_TRACES, off: it costs a sixth of the
     * worker's main thread under load, docs/operations.md). */
    readonly workflowStackTraces: boolean;
    /** Worker Versioning (docs/operations.md, "Deploying"): the worker polls as one build of the
     * worker deployment named after its task queue. */
    readonly versioning: {
      /** TEMPORAL_WORKER_VERSIONING (true): false for a server without worker deployments; the
       * worker then polls unversioned and a deploy must drain the task queue first. */
      readonly enabled: boolean;
      /** TEMPORAL_BUILD_ID: unset, the build's own (package version + commit, written by `npm run build`). */
      readonly buildId: string | undefined;
      /** TEMPORAL_DEPLOYMENT_PROMOTE: `if-none` (default) makes this build current only when the
       * deployment has no current build yet (a first start); `on-start` makes it current whenever
       * it starts (`npm start`); otherwise an operator promotes it (`mas deploy promote`). */
      readonly promote: 'if-none' | 'on-start';
    };
  };
  /** Runs one api process has waiting for their first stop at once (API_MAX_RUNS_IN_FLIGHT); past
   * that a new run waits up to API_RUN_WAIT_MS for a turn, then gets 503 service_unavailable. */
  readonly runs: { readonly maxInFlight: number; readonly maxWaitMs: number };
  /** 32-byte key for AES-256-GCM encryption of customers' secrets (model keys, MCP headers, webhook
   * secrets): what is written is sealed under it. */
  readonly masterKey: Buffer;
  /** Master keys being retired (MAS_MASTER_KEYS_PREVIOUS, comma-separated base64): still read, never
   * written; `mas secrets reencrypt` moves what they sealed to MAS_MASTER_KEY (docs/operations.md). */
  readonly previousMasterKeys: readonly Buffer[];
  /** Secret pepper of the HMAC-SHA-256 under which API keys are stored. */
  readonly apiKeyPepper: Buffer;
  /** Peppers being retired (MAS_API_KEY_PEPPERS_PREVIOUS, comma-separated base64): a key stored
   * under one still authenticates, and is stored again under MAS_API_KEY_PEPPER at that use. */
  readonly previousApiKeyPeppers: readonly Buffer[];
  /** AES-256-GCM keys of Temporal payloads (MAS_PAYLOAD_KEYS, `id:base64,...`) and the id new
   * payloads are encrypted under (MAS_PAYLOAD_KEY_CURRENT; may be left out when there is one key). */
  readonly payloadKeys: { readonly current: string; readonly keys: ReadonlyMap<string, Buffer> };
  /** Bearer token of the api's codec endpoints (MAS_CODEC_TOKEN); unset: they refuse every call. */
  readonly codecToken: string | undefined;
  /** Whether the codec token is also taken as a path segment, `/codec/<token>/decode`
   * (MAS_CODEC_TOKEN_IN_PATH, default false): only for a Temporal UI that can neither send a header
   * nor cookies, the local stack's dev server (scripts/start.sh sets it). */
  readonly codecTokenInPath: boolean;
  /** Hosts, IP addresses or CIDRs that fetch_url may reach although they are not public (FETCH_URL_ALLOW_HOSTS, comma-separated). */
  readonly fetchUrlAllowHosts: readonly string[];
  /** Hosts, IP addresses or CIDRs a project's model base URL may be on although not public
   * (MODEL_ALLOW_HOSTS, comma-separated, like FETCH_URL_ALLOW_HOSTS): the operator's private model
   * servers. Checked at start-up, since every model call is held to it. */
  readonly modelAllowHosts: readonly string[];
  /** Outbound webhooks (docs/webhooks.md). */
  readonly webhooks: {
    /** Hosts, IP addresses or CIDRs that receivers may be on although not public (WEBHOOK_ALLOW_HOSTS, comma-separated, like FETCH_URL_ALLOW_HOSTS). */
    readonly allowHosts: readonly string[];
    /** First retry delay of a failed delivery, doubled each time (WEBHOOK_RETRY_INITIAL_INTERVAL_MS, 5000). */
    readonly retryInitialIntervalMs: number;
    /** Longest delay between two attempts (WEBHOOK_RETRY_MAXIMUM_INTERVAL_MS, 3600000). */
    readonly retryMaximumIntervalMs: number;
    /** How long a delivery is retried before it counts as failed (WEBHOOK_RETRY_FOR_MS, 86400000: 24 hours). */
    readonly retryForMs: number;
    /** Time limit of one attempt, the receiver's answer included (WEBHOOK_TIMEOUT_MS, 15000). */
    readonly requestTimeoutMs: number;
  };
  /** Plans by name: monthly quota and allowed capabilities (MAS_PLANS overrides the defaults). */
  readonly plans: Readonly<Record<PlanName, Plan>>;
  /** Per-project caps by plan (MAS_PLAN_CAPS overrides the defaults, DEFAULT_PROJECT_CAPS). */
  readonly caps: Readonly<Record<PlanName, ProjectCaps>>;
  /** Credits each capability adds when used (MAS_CAPABILITY_SURCHARGES overrides the defaults). */
  readonly capabilitySurcharges: Readonly<Record<Capability, number>>;
  readonly sessions: {
    /** Idle time after which a session expires (contract: 30 minutes; SESSION_IDLE_TIMEOUT_MS). */
    readonly idleTimeoutMs: number;
  };
  /** How long a paused request waits for its tool outputs (contract: 5 minutes; TOOL_OUTPUTS_TIMEOUT_MS). */
  readonly toolOutputsTimeoutMs: number;
  /** How long a finished run's stream events stay replayable (STREAM_RETENTION_SECONDS, 86400);
   * a running one's are kept while it runs (libs/streaming, stream-store.ts). */
  readonly streamRetentionSeconds: number;
  /** How often the ledger reconciler's Temporal Schedule runs (RECONCILER_INTERVAL_SECONDS, 300);
   * 0: the worker does not create the schedule (another deployment of the same namespace does). */
  readonly reconcilerIntervalSeconds: number;
  readonly tracing: {
    /** OTEL_EXPORTER_OTLP_ENDPOINT: the OTLP/HTTP base URL spans are exported to (`<url>/v1/traces`);
     * unset: no tracing. */
    readonly otlpEndpoint: string | undefined;
  };
  /** Ports of the apps' /metrics listeners, apart from their public ports (0: none).
   * `temporalSdkPort` is where the worker's Temporal runtime exposes its own Prometheus metrics on
   * loopback, merged into the worker's /metrics. */
  readonly metrics: {
    /** The address the /metrics listeners bind (METRICS_HOST, 127.0.0.1; the chart: 0.0.0.0). */
    readonly host: string;
    readonly apiPort: number;
    readonly consolePort: number;
    readonly workerPort: number;
    readonly relayPort: number;
    readonly projectorPort: number;
    readonly temporalSdkPort: number;
  };
  /** `json`: one JSON object a line; `pretty`: pino-pretty; unset: pretty on a terminal, JSON otherwise (LOG_FORMAT). */
  readonly logFormat: 'json' | 'pretty' | undefined;
  /** The lowest level logged (LOG_LEVEL: trace, debug, info, warn, error, fatal; info). */
  readonly logLevel: LogLevelName;
  /** TLS and authentication to managed engines: Temporal (TLS, mTLS, an API key) and Kafka (SSL,
   * SASL); engines.ts, docs/deploy.md. PostgreSQL's are DATABASE_URL's own parameters. */
  readonly engines: { readonly temporal: TemporalSecurity; readonly kafka: KafkaSecurity };
}

/** pino's level names, lowest first. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/** The Temporal address, or a ConfigError naming TEMPORAL_ADDRESS (for processes that cannot run without it). */
export function requireTemporalAddress(config: AppConfig): string {
  if (!config.temporal.address) throw new ConfigError(['TEMPORAL_ADDRESS is required but not set']);
  return config.temporal.address;
}

type Env = Readonly<Record<string, string | undefined>>;

class Reader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  string(name: string, fallback?: string): string {
    const raw = this.env[name]?.trim();
    if (raw) return raw;
    if (fallback !== undefined) return fallback;
    this.problems.push(`${name} is required but not set`);
    return '';
  }

  optional(name: string): string | undefined {
    return this.env[name]?.trim() || undefined;
  }

  /** A comma-separated allow-list of hosts, `*.domain` patterns, IP addresses or CIDRs (unset: none). */
  allowHosts(name: string): string[] {
    const entries = (this.optional(name) ?? '')
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean);
    const parsed = HostAllowList.parse(entries);
    if (!(parsed instanceof HostAllowList)) this.problems.push(`${name}: ${parsed.error}`);
    return entries;
  }

  /** `true` or `false` (unset: false). */
  flag(name: string): boolean {
    const raw = this.env[name]?.trim().toLowerCase();
    if (!raw || raw === 'false') return false;
    if (raw === 'true') return true;
    this.problems.push(`${name} must be true or false, got "${raw}"`);
    return false;
  }

  port(name: string, fallback: number): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 65535) {
      this.problems.push(`${name} must be a TCP port (1-65535), got "${raw}"`);
    }
    return n;
  }

  /** An IPv4 or IPv6 address to bind (no host name: what a listener binds must not depend on DNS). */
  ipAddress(name: string, fallback: string): string {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    if (isIP(raw) === 0) this.problems.push(`${name} must be an IP address (e.g. 127.0.0.1 or 0.0.0.0), got "${raw}"`);
    return raw;
  }

  /** A TCP port, or 0 for "none". */
  optionalPort(name: string): number {
    const raw = this.optional(name);
    if (raw === undefined) return 0;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0 || n > 65535)
      this.problems.push(`${name} must be a TCP port (1-65535) or 0 for none, got "${raw}"`);
    return n;
  }

  oneOf<T extends string>(name: string, values: readonly T[]): T | undefined {
    const raw = this.optional(name);
    if (raw === undefined) return undefined;
    if (!(values as readonly string[]).includes(raw))
      this.problems.push(`${name} must be one of ${values.join(', ')}, got "${raw}"`);
    return raw as T;
  }

  positiveInt(name: string, fallback: number): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) this.problems.push(`${name} must be a positive integer, got "${raw}"`);
    return n;
  }

  nonNegativeInt(name: string, fallback: number): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0) this.problems.push(`${name} must be an integer >= 0, got "${raw}"`);
    return n;
  }

  optionalUrl(name: string, protocols: readonly string[]): string | undefined {
    return this.optional(name) === undefined ? undefined : this.url(name, protocols);
  }

  url(name: string, protocols: readonly string[], fallback?: string): string {
    const raw = this.string(name, fallback);
    if (!raw) return raw;
    try {
      const url = new URL(raw);
      if (!protocols.includes(url.protocol)) {
        this.problems.push(`${name} must be a ${protocols.join(' or ')} URL, got protocol "${url.protocol}"`);
      }
    } catch {
      this.problems.push(`${name} must be a URL`);
    }
    return raw;
  }

  hostPorts(name: string): string[] {
    const raw = this.string(name);
    if (!raw) return [];
    const items = raw.split(',').map((s) => s.trim());
    for (const item of items) {
      if (!/^[^\s:]+:\d{1,5}$/.test(item)) {
        this.problems.push(`${name} must be a comma-separated list of host:port, got "${item}"`);
      }
    }
    return items;
  }

  json(name: string): unknown {
    const raw = this.optional(name);
    if (raw === undefined) return undefined;
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      this.problems.push(`${name} must be JSON`);
      return undefined;
    }
  }

  plans(name: string): Record<PlanName, Plan> {
    const plans: Record<PlanName, Plan> = { ...DEFAULT_PLANS };
    const raw = this.json(name);
    if (raw === undefined) return plans;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      this.problems.push(`${name} must be a JSON object of plan name to { monthlyQuota, capabilities }`);
      return plans;
    }
    for (const [planName, value] of Object.entries(raw)) {
      const v = value as { monthlyQuota?: unknown; capabilities?: unknown };
      if (!isPlanName(planName)) {
        this.problems.push(`${name}: unknown plan "${planName}" (plans: free, starter, pro)`);
      } else if (
        typeof v !== 'object' ||
        v === null ||
        !Number.isInteger(v.monthlyQuota) ||
        (v.monthlyQuota as number) < 0 ||
        !Array.isArray(v.capabilities) ||
        !v.capabilities.every(isCapability)
      ) {
        this.problems.push(
          `${name}: plan "${planName}" needs an integer monthlyQuota >= 0 and capabilities from ${CAPABILITIES.join(', ')}`,
        );
      } else {
        plans[planName] = { name: planName, monthlyQuota: v.monthlyQuota as number, capabilities: v.capabilities };
      }
    }
    return plans;
  }

  caps(name: string): Record<PlanName, ProjectCaps> {
    const caps: Record<PlanName, ProjectCaps> = { ...DEFAULT_PROJECT_CAPS };
    const raw = this.json(name);
    if (raw === undefined) return caps;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      this.problems.push(
        `${name} must be a JSON object of plan name to { openStreams, runsInFlight, inputBytesPerDay } (any of them)`,
      );
      return caps;
    }
    for (const [planName, value] of Object.entries(raw)) {
      if (!isPlanName(planName)) {
        this.problems.push(`${name}: unknown plan "${planName}" (plans: free, starter, pro)`);
        continue;
      }
      const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
      const bad = Object.entries(v).filter(
        ([k, n]) => !(k in DEFAULT_PROJECT_CAPS.free) || !Number.isSafeInteger(n) || (n as number) < 1,
      );
      if (typeof value !== 'object' || value === null || bad.length > 0) {
        this.problems.push(
          `${name}: plan "${planName}" takes positive integers openStreams, runsInFlight and inputBytesPerDay`,
        );
      } else {
        caps[planName] = { ...caps[planName], ...(v as Partial<ProjectCaps>) };
      }
    }
    return caps;
  }

  surcharges(name: string): Record<Capability, number> {
    const surcharges: Record<Capability, number> = { ...DEFAULT_CAPABILITY_SURCHARGES };
    const raw = this.json(name);
    if (raw === undefined) return surcharges;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      this.problems.push(`${name} must be a JSON object of capability to credits`);
      return surcharges;
    }
    for (const [capability, credits] of Object.entries(raw)) {
      if (!isCapability(capability) || !Number.isInteger(credits) || (credits as number) < 0) {
        this.problems.push(`${name}: "${capability}" must be a capability with an integer surcharge >= 0`);
      } else {
        surcharges[capability] = credits as number;
      }
    }
    return surcharges;
  }

  payloadKeys(name: string, currentName: string): AppConfig['payloadKeys'] {
    const keys = new Map<string, Buffer>();
    const raw = this.string(name);
    for (const item of raw ? raw.split(',').map((s) => s.trim()) : []) {
      const colon = item.indexOf(':');
      const id = item.slice(0, Math.max(colon, 0));
      const key = Buffer.from(item.slice(colon + 1), 'base64');
      // The key itself must never reach a log line: name the id only.
      if (!/^[A-Za-z0-9._-]{1,64}$/.test(id) || key.length !== 32 || key.toString('base64') !== item.slice(colon + 1)) {
        this.problems.push(
          `${name} must be a comma-separated list of id:key, each id [A-Za-z0-9._-] and each key 32 random bytes in base64 (e.g. \`k1:$(head -c 32 /dev/urandom | base64)\`); ${id ? `"${id}"` : 'an entry'} is not`,
        );
      } else if (keys.has(id)) {
        this.problems.push(`${name} names the key id "${id}" twice`);
      } else {
        keys.set(id, key);
      }
    }
    let current = this.optional(currentName) ?? '';
    if (!current && keys.size === 1) current = [...keys.keys()][0]!;
    else if (!current && keys.size > 1)
      this.problems.push(`${currentName} is required when ${name} holds more than one key`);
    else if (current && raw && !keys.has(current))
      this.problems.push(`${currentName} names "${current}", which is not a key id of ${name}`);
    return { current, keys };
  }

  token(name: string, minLength: number): string | undefined {
    const raw = this.optional(name);
    if (raw !== undefined && (raw.length < minLength || !/^[\x21-\x7e]+$/.test(raw))) {
      this.problems.push(`${name} must be at least ${minLength} printable characters without spaces`);
    }
    return raw;
  }

  /** A comma-separated list of secrets of `bytes` bytes each, in base64; empty when unset. */
  secrets(name: string, bytes: number): Buffer[] {
    const raw = this.optional(name);
    if (!raw) return [];
    const items = raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const keys = items.map((item) => Buffer.from(item, 'base64'));
    // Lengths only: the values themselves must never reach a log line.
    if (keys.some((key, i) => key.length !== bytes || key.toString('base64') !== items[i])) {
      this.problems.push(`${name} must be a comma-separated list of ${bytes} random bytes each in base64`);
    }
    return keys;
  }

  secret(name: string, bytes: number): Buffer {
    const raw = this.string(name);
    if (!raw) return Buffer.alloc(0);
    const buf = Buffer.from(raw, 'base64');
    // Length only: the value itself must never reach a log line.
    if (buf.length !== bytes || buf.toString('base64') !== raw) {
      this.problems.push(
        `${name} must be ${bytes} random bytes in base64 (e.g. \`head -c ${bytes} /dev/urandom | base64\`)`,
      );
    }
    return buf;
  }
}

function consoleConfig(r: Reader): AppConfig['console'] {
  const before = r.problems.length;
  const port = r.port('CONSOLE_PORT', 3001);
  return {
    port,
    trustedProxyHops: r.nonNegativeInt('CONSOLE_TRUSTED_PROXY_HOPS', 0),
    publicUrl: r
      .url('CONSOLE_PUBLIC_URL', ['http:', 'https:'], `http://localhost:${r.problems.length === before ? port : 3001}`)
      .replace(/\/+$/, ''),
  };
}

/** Reads and validates the configuration; throws one ConfigError naming every bad variable. */
export function loadConfig(env: Env): AppConfig {
  const r = new Reader(env);
  const port = r.port('PORT', 3000);
  const problemsBefore = r.problems.length;
  const config: AppConfig = {
    port,
    keepAliveTimeoutMs: r.positiveInt('HTTP_KEEP_ALIVE_TIMEOUT_MS', 65_000),
    publicBaseUrl: r
      .url('PUBLIC_BASE_URL', ['http:', 'https:'], `http://localhost:${problemsBefore === 0 ? port : 3000}`)
      .replace(/\/+$/, ''),
    trustedProxyHops: r.nonNegativeInt('TRUSTED_PROXY_HOPS', 0),
    console: consoleConfig(r),
    smtp: readSmtpSettings(env, r.problems),
    databaseUrl: r.url('DATABASE_URL', ['postgres:', 'postgresql:']),
    kafkaBrokers: r.hostPorts('KAFKA_BROKERS'),
    kafkaGroupPrefix: r.string('KAFKA_GROUP_PREFIX', 'mas'),
    temporal: {
      address: r.optional('TEMPORAL_ADDRESS'),
      namespace: r.string('TEMPORAL_NAMESPACE', 'default'),
      taskQueue: r.string('TEMPORAL_TASK_QUEUE', 'mas-agent'),
      longActivityTaskQueue: r.optional('TEMPORAL_LONG_ACTIVITY_TASK_QUEUE'),
      workerRole: r.oneOf('TEMPORAL_WORKER_ROLE', ['workflows', 'long-activities'] as const) ?? 'workflows',
      uiUrl: r.optional('TEMPORAL_UI_URL'),
      pickupTimeoutMs: r.positiveInt('AGENT_PICKUP_TIMEOUT_MS', 10_000),
      workflowStackTraces: r.flag('WORKFLOW_STACK_TRACES'),
      versioning: {
        enabled: r.oneOf('TEMPORAL_WORKER_VERSIONING', ['true', 'false'] as const) !== 'false',
        buildId: r.optional('TEMPORAL_BUILD_ID'),
        promote: r.oneOf('TEMPORAL_DEPLOYMENT_PROMOTE', ['if-none', 'on-start'] as const) ?? 'if-none',
      },
    },
    testHooks: { exitAfterRecordStop: r.flag('MAS_TEST_EXIT_AFTER_RECORD_STOP') },
    runs: {
      maxInFlight: r.positiveInt('API_MAX_RUNS_IN_FLIGHT', 64),
      maxWaitMs: r.positiveInt('API_RUN_WAIT_MS', 5_000),
    },
    masterKey: r.secret('MAS_MASTER_KEY', 32),
    previousMasterKeys: r.secrets('MAS_MASTER_KEYS_PREVIOUS', 32),
    apiKeyPepper: r.secret('MAS_API_KEY_PEPPER', 32),
    previousApiKeyPeppers: r.secrets('MAS_API_KEY_PEPPERS_PREVIOUS', 32),
    payloadKeys: r.payloadKeys('MAS_PAYLOAD_KEYS', 'MAS_PAYLOAD_KEY_CURRENT'),
    codecToken: r.token('MAS_CODEC_TOKEN', 32),
    codecTokenInPath: r.flag('MAS_CODEC_TOKEN_IN_PATH'),
    fetchUrlAllowHosts: (r.optional('FETCH_URL_ALLOW_HOSTS') ?? '')
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean),
    modelAllowHosts: r.allowHosts('MODEL_ALLOW_HOSTS'),
    webhooks: {
      allowHosts: (r.optional('WEBHOOK_ALLOW_HOSTS') ?? '')
        .split(',')
        .map((h) => h.trim())
        .filter(Boolean),
      retryInitialIntervalMs: r.positiveInt('WEBHOOK_RETRY_INITIAL_INTERVAL_MS', 5_000),
      retryMaximumIntervalMs: r.positiveInt('WEBHOOK_RETRY_MAXIMUM_INTERVAL_MS', 60 * 60 * 1000),
      retryForMs: r.positiveInt('WEBHOOK_RETRY_FOR_MS', 24 * 60 * 60 * 1000),
      requestTimeoutMs: r.positiveInt('WEBHOOK_TIMEOUT_MS', 15_000),
    },
    plans: r.plans('MAS_PLANS'),
    caps: r.caps('MAS_PLAN_CAPS'),
    capabilitySurcharges: r.surcharges('MAS_CAPABILITY_SURCHARGES'),
    sessions: { idleTimeoutMs: r.positiveInt('SESSION_IDLE_TIMEOUT_MS', SESSION_LIMITS.idleTimeoutMs) },
    reconcilerIntervalSeconds: r.nonNegativeInt('RECONCILER_INTERVAL_SECONDS', 300),
    toolOutputsTimeoutMs: r.positiveInt('TOOL_OUTPUTS_TIMEOUT_MS', 5 * 60 * 1000),
    streamRetentionSeconds: r.positiveInt('STREAM_RETENTION_SECONDS', 24 * 60 * 60),
    tracing: { otlpEndpoint: r.optionalUrl('OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']) },
    metrics: {
      host: r.ipAddress('METRICS_HOST', '127.0.0.1'),
      apiPort: r.optionalPort('API_METRICS_PORT'),
      consolePort: r.optionalPort('CONSOLE_METRICS_PORT'),
      workerPort: r.optionalPort('WORKER_METRICS_PORT'),
      relayPort: r.optionalPort('RELAY_METRICS_PORT'),
      projectorPort: r.optionalPort('PROJECTOR_METRICS_PORT'),
      temporalSdkPort: r.optionalPort('TEMPORAL_SDK_METRICS_PORT'),
    },
    logFormat: r.oneOf('LOG_FORMAT', ['json', 'pretty'] as const),
    logLevel: r.oneOf('LOG_LEVEL', LOG_LEVELS) ?? 'info',
    engines: { temporal: readTemporalSecurity(env, r.problems), kafka: readKafkaSecurity(env, r.problems) },
  };
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return config;
}
