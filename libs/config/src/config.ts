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
  /** The externally visible base URL of the api, used in `error.docs` links and file URLs. */
  readonly publicBaseUrl: string;
  readonly databaseUrl: string;
  readonly kafkaBrokers: readonly string[];
  readonly temporal: {
    readonly address: string;
    readonly namespace: string;
    readonly taskQueue: string;
    readonly uiUrl: string | undefined;
  };
  /** 32-byte key for AES-256-GCM encryption of customers' model keys. */
  readonly masterKey: Buffer;
  /** Secret pepper of the HMAC-SHA-256 under which API keys are stored. */
  readonly apiKeyPepper: Buffer;
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

  port(name: string, fallback: number): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 65535) {
      this.problems.push(`${name} must be a TCP port (1-65535), got "${raw}"`);
    }
    return n;
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

  secret(name: string, bytes: number): Buffer {
    const raw = this.string(name);
    if (!raw) return Buffer.alloc(0);
    const buf = Buffer.from(raw, 'base64');
    // Length only: the value itself must never reach a log line.
    if (buf.length !== bytes || buf.toString('base64') !== raw) {
      this.problems.push(`${name} must be ${bytes} random bytes in base64 (e.g. \`head -c ${bytes} /dev/urandom | base64\`)`);
    }
    return buf;
  }
}

/** Reads and validates the configuration; throws one ConfigError naming every bad variable. */
export function loadConfig(env: Env): AppConfig {
  const r = new Reader(env);
  const port = r.port('PORT', 3000);
  const problemsBefore = r.problems.length;
  const config: AppConfig = {
    port,
    publicBaseUrl: r.url('PUBLIC_BASE_URL', ['http:', 'https:'], `http://localhost:${problemsBefore === 0 ? port : 3000}`).replace(/\/+$/, ''),
    databaseUrl: r.url('DATABASE_URL', ['postgres:', 'postgresql:']),
    kafkaBrokers: r.hostPorts('KAFKA_BROKERS'),
    temporal: {
      address: r.string('TEMPORAL_ADDRESS'),
      namespace: r.string('TEMPORAL_NAMESPACE', 'default'),
      taskQueue: r.string('TEMPORAL_TASK_QUEUE', 'mas-agent'),
      uiUrl: r.optional('TEMPORAL_UI_URL'),
    },
    masterKey: r.secret('MAS_MASTER_KEY', 32),
    apiKeyPepper: r.secret('MAS_API_KEY_PEPPER', 32),
  };
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return config;
}
