import { ConfigError, DEFAULT_PROJECT_CAPS, loadConfig } from './config.js';

const key = Buffer.alloc(32, 7).toString('base64');
const valid = {
  DATABASE_URL: 'postgres://mas@127.0.0.1:55432/mas',
  KAFKA_BROKERS: '127.0.0.1:19092,127.0.0.2:19092',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  MAS_MASTER_KEY: key,
  MAS_API_KEY_PEPPER: key,
  MAS_PAYLOAD_KEYS: `k1:${key}`,
};

function problemsOf(env: Record<string, string | undefined>): readonly string[] {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('parses a complete environment and applies defaults', () => {
    const config = loadConfig(valid);
    expect(config.port).toBe(3000);
    expect(config.keepAliveTimeoutMs).toBe(65_000);
    expect(config.publicBaseUrl).toBe('http://localhost:3000');
    expect(config.kafkaBrokers).toEqual(['127.0.0.1:19092', '127.0.0.2:19092']);
    expect(config.temporal).toEqual({
      address: '127.0.0.1:7233',
      namespace: 'default',
      taskQueue: 'mas-agent',
      longActivityTaskQueue: undefined,
      workerRole: 'workflows',
      uiUrl: undefined,
      pickupTimeoutMs: 10000,
      workflowStackTraces: false,
      versioning: { enabled: true, buildId: undefined, promote: 'if-none' },
    });
    expect(loadConfig({ ...valid, WORKFLOW_STACK_TRACES: 'true' }).temporal.workflowStackTraces).toBe(true);
    expect(
      loadConfig({
        ...valid,
        TEMPORAL_LONG_ACTIVITY_TASK_QUEUE: 'mas-agent-long',
        TEMPORAL_WORKER_ROLE: 'long-activities',
      }).temporal,
    ).toMatchObject({ longActivityTaskQueue: 'mas-agent-long', workerRole: 'long-activities' });
    expect(problemsOf({ ...valid, TEMPORAL_WORKER_ROLE: 'activities' })).toEqual([
      expect.stringContaining('TEMPORAL_WORKER_ROLE'),
    ]);
    expect(
      loadConfig({
        ...valid,
        TEMPORAL_WORKER_VERSIONING: 'false',
        TEMPORAL_BUILD_ID: '0.2.0+abc',
        TEMPORAL_DEPLOYMENT_PROMOTE: 'on-start',
      }).temporal.versioning,
    ).toEqual({ enabled: false, buildId: '0.2.0+abc', promote: 'on-start' });
    expect(problemsOf({ ...valid, TEMPORAL_WORKER_VERSIONING: 'no', TEMPORAL_DEPLOYMENT_PROMOTE: 'always' })).toEqual([
      expect.stringContaining('TEMPORAL_WORKER_VERSIONING'),
      expect.stringContaining('TEMPORAL_DEPLOYMENT_PROMOTE'),
    ]);
    expect(problemsOf({ ...valid, WORKFLOW_STACK_TRACES: 'yes' })).toEqual([
      'WORKFLOW_STACK_TRACES must be true or false, got "yes"',
    ]);
    expect(config.runs).toEqual({ maxInFlight: 64, maxWaitMs: 5000 });
    expect(config.masterKey).toHaveLength(32);
    expect(config.kafkaGroupPrefix).toBe('mas');
    expect(config.fetchUrlAllowHosts).toEqual([]);
    expect(loadConfig({ ...valid, FETCH_URL_ALLOW_HOSTS: 'intranet.example, 10.0.0.0/8' }).fetchUrlAllowHosts).toEqual([
      'intranet.example',
      '10.0.0.0/8',
    ]);
    expect(config.modelAllowHosts).toEqual([]);
    expect(loadConfig({ ...valid, MODEL_ALLOW_HOSTS: '127.0.0.1, ollama.internal,::1' }).modelAllowHosts).toEqual([
      '127.0.0.1',
      'ollama.internal',
      '::1',
    ]);
    expect(problemsOf({ ...valid, MODEL_ALLOW_HOSTS: 'http://ollama:11434' })).toEqual([
      'MODEL_ALLOW_HOSTS: allowHosts entry "http://ollama:11434" is neither a hostname, a "*.domain" pattern, an IP address nor a CIDR',
    ]);
    expect(loadConfig({ ...valid, SESSION_IDLE_TIMEOUT_MS: '2000' }).sessions.idleTimeoutMs).toBe(2000);
    expect(problemsOf({ ...valid, SESSION_IDLE_TIMEOUT_MS: 'soon' })).toEqual([
      expect.stringContaining('SESSION_IDLE_TIMEOUT_MS'),
    ]);
    expect(config.streamRetentionSeconds).toBe(86_400);
    expect(loadConfig({ ...valid, STREAM_RETENTION_SECONDS: '1' }).streamRetentionSeconds).toBe(1);
    expect(problemsOf({ ...valid, STREAM_RETENTION_SECONDS: '0' })).toEqual([
      expect.stringContaining('STREAM_RETENTION_SECONDS'),
    ]);
  });

  it('reads the webhook settings: public receivers only and 24 hours of retries by default', () => {
    expect(loadConfig(valid).webhooks).toEqual({
      allowHosts: [],
      retryInitialIntervalMs: 5000,
      retryMaximumIntervalMs: 3600000,
      retryForMs: 86400000,
      requestTimeoutMs: 15000,
    });
    expect(
      loadConfig({
        ...valid,
        WEBHOOK_ALLOW_HOSTS: '127.0.0.1, hooks.internal',
        WEBHOOK_RETRY_INITIAL_INTERVAL_MS: '100',
      }).webhooks,
    ).toMatchObject({ allowHosts: ['127.0.0.1', 'hooks.internal'], retryInitialIntervalMs: 100 });
    expect(problemsOf({ ...valid, WEBHOOK_RETRY_FOR_MS: '1 day', WEBHOOK_TIMEOUT_MS: '0' })).toEqual([
      expect.stringContaining('WEBHOOK_RETRY_FOR_MS'),
      expect.stringContaining('WEBHOOK_TIMEOUT_MS'),
    ]);
  });

  it('names every missing variable at once', () => {
    expect(problemsOf({})).toEqual([
      'DATABASE_URL is required but not set',
      'KAFKA_BROKERS is required but not set',
      'MAS_MASTER_KEY is required but not set',
      'MAS_API_KEY_PEPPER is required but not set',
      'MAS_PAYLOAD_KEYS is required but not set',
    ]);
  });

  it('rejects malformed values by name without echoing secrets', () => {
    const problems = problemsOf({
      ...valid,
      PORT: '70000',
      DATABASE_URL: 'mysql://x/y',
      KAFKA_BROKERS: 'localhost',
      MAS_MASTER_KEY: 'c2hvcnQ=',
    });
    expect(problems).toEqual([
      'PORT must be a TCP port (1-65535), got "70000"',
      'DATABASE_URL must be a postgres: or postgresql: URL, got protocol "mysql:"',
      'KAFKA_BROKERS must be a comma-separated list of host:port, got "localhost"',
      expect.stringMatching(/^MAS_MASTER_KEY must be 32 random bytes in base64/),
    ]);
    expect(problems.join('\n')).not.toContain('c2hvcnQ=');
  });

  it('takes plan and surcharge overrides, and names a bad one', () => {
    const config = loadConfig({
      ...valid,
      MAS_PLANS: '{"free":{"monthlyQuota":5,"capabilities":["chat"]}}',
      MAS_CAPABILITY_SURCHARGES: '{"code":3}',
    });
    expect(config.plans.free).toEqual({ name: 'free', monthlyQuota: 5, capabilities: ['chat'] });
    expect(config.plans.pro.monthlyQuota).toBe(50000);
    expect(config.capabilitySurcharges).toEqual({ chat: 0, research: 2, documents: 0, code: 3, data: 1, files: 0 });
    expect(problemsOf({ ...valid, MAS_PLANS: '{"gold":{}}' })).toEqual([
      'MAS_PLANS: unknown plan "gold" (plans: free, starter, pro)',
    ]);
    expect(problemsOf({ ...valid, MAS_CAPABILITY_SURCHARGES: '{' })).toEqual([
      'MAS_CAPABILITY_SURCHARGES must be JSON',
    ]);
  });

  it('takes per-plan cap overrides over the defaults, and names a bad one', () => {
    expect(loadConfig(valid).caps).toEqual(DEFAULT_PROJECT_CAPS);
    const config = loadConfig({
      ...valid,
      MAS_PLAN_CAPS: '{"free":{"runsInFlight":2},"pro":{"openStreams":5,"inputBytesPerDay":1000}}',
    });
    expect(config.caps.free).toEqual({ ...DEFAULT_PROJECT_CAPS.free, runsInFlight: 2 });
    expect(config.caps.pro).toEqual({ ...DEFAULT_PROJECT_CAPS.pro, openStreams: 5, inputBytesPerDay: 1000 });
    expect(config.caps.starter).toEqual(DEFAULT_PROJECT_CAPS.starter);
    expect(problemsOf({ ...valid, MAS_PLAN_CAPS: '{"gold":{}}' })).toEqual([
      'MAS_PLAN_CAPS: unknown plan "gold" (plans: free, starter, pro)',
    ]);
    expect(problemsOf({ ...valid, MAS_PLAN_CAPS: '{"free":{"runsInFlight":0}}' })).toEqual([
      'MAS_PLAN_CAPS: plan "free" takes positive integers openStreams, runsInFlight and inputBytesPerDay',
    ]);
    expect(problemsOf({ ...valid, MAS_PLAN_CAPS: '{"free":{"streams":3}}' })).toEqual([
      'MAS_PLAN_CAPS: plan "free" takes positive integers openStreams, runsInFlight and inputBytesPerDay',
    ]);
  });

  it('reads the payload keys and the current one, and names a bad one without echoing it', () => {
    const other = Buffer.alloc(32, 9).toString('base64');
    expect(loadConfig(valid).payloadKeys).toEqual({ current: 'k1', keys: new Map([['k1', Buffer.alloc(32, 7)]]) });
    const rotated = loadConfig({
      ...valid,
      MAS_PAYLOAD_KEYS: `k1:${key}, k2:${other}`,
      MAS_PAYLOAD_KEY_CURRENT: 'k2',
    }).payloadKeys;
    expect(rotated.current).toBe('k2');
    expect([...rotated.keys.keys()]).toEqual(['k1', 'k2']);
    expect(problemsOf({ ...valid, MAS_PAYLOAD_KEYS: `k1:${key},k2:${other}` })).toEqual([
      'MAS_PAYLOAD_KEY_CURRENT is required when MAS_PAYLOAD_KEYS holds more than one key',
    ]);
    expect(problemsOf({ ...valid, MAS_PAYLOAD_KEY_CURRENT: 'k9' })).toEqual([
      'MAS_PAYLOAD_KEY_CURRENT names "k9", which is not a key id of MAS_PAYLOAD_KEYS',
    ]);
    expect(problemsOf({ ...valid, MAS_PAYLOAD_KEYS: `k1:${key},k1:${other}`, MAS_PAYLOAD_KEY_CURRENT: 'k1' })).toEqual([
      'MAS_PAYLOAD_KEYS names the key id "k1" twice',
    ]);
    const bad = problemsOf({ ...valid, MAS_PAYLOAD_KEYS: 'k1:c2hvcnQ=' });
    expect(bad).toEqual([
      expect.stringMatching(/^MAS_PAYLOAD_KEYS must be a comma-separated list of id:key.*"k1" is not$/),
    ]);
    expect(bad.join('\n')).not.toContain('c2hvcnQ=');
    expect(problemsOf({ ...valid, MAS_PAYLOAD_KEYS: key })).toEqual([
      expect.stringMatching(/^MAS_PAYLOAD_KEYS must be .* an entry is not$/),
    ]);
  });

  it('takes an optional codec token of at least 32 characters', () => {
    expect(loadConfig(valid).codecToken).toBeUndefined();
    expect(loadConfig({ ...valid, MAS_CODEC_TOKEN: 'x'.repeat(32) }).codecToken).toBe('x'.repeat(32));
    expect(problemsOf({ ...valid, MAS_CODEC_TOKEN: 'short' })).toEqual([
      'MAS_CODEC_TOKEN must be at least 32 printable characters without spaces',
    ]);
  });

  it('takes an optional OTLP endpoint, an http(s) URL', () => {
    expect(loadConfig(valid).tracing.otlpEndpoint).toBeUndefined();
    expect(loadConfig({ ...valid, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }).tracing.otlpEndpoint).toBe(
      'http://127.0.0.1:4318',
    );
    expect(problemsOf({ ...valid, OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' })).toEqual([
      'OTEL_EXPORTER_OTLP_ENDPOINT must be a http: or https: URL, got protocol "grpc:"',
    ]);
  });

  it('strips a trailing slash from PUBLIC_BASE_URL', () => {
    expect(loadConfig({ ...valid, PUBLIC_BASE_URL: 'https://agents.example.com/' }).publicBaseUrl).toBe(
      'https://agents.example.com',
    );
  });

  it('reads the metrics ports (0 or unset: none) and the log format and level', () => {
    const config = loadConfig(valid);
    expect(config.metrics).toEqual({
      host: '127.0.0.1',
      apiPort: 0,
      consolePort: 0,
      workerPort: 0,
      relayPort: 0,
      projectorPort: 0,
      temporalSdkPort: 0,
    });
    expect({ format: config.logFormat, level: config.logLevel }).toEqual({ format: undefined, level: 'info' });
    const set = loadConfig({
      ...valid,
      METRICS_HOST: '0.0.0.0',
      API_METRICS_PORT: '9100',
      CONSOLE_METRICS_PORT: '9105',
      WORKER_METRICS_PORT: '9101',
      RELAY_METRICS_PORT: '0',
      TEMPORAL_SDK_METRICS_PORT: '9104',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'warn',
    });
    expect(set.metrics).toEqual({
      host: '0.0.0.0',
      apiPort: 9100,
      consolePort: 9105,
      workerPort: 9101,
      relayPort: 0,
      projectorPort: 0,
      temporalSdkPort: 9104,
    });
    expect({ format: set.logFormat, level: set.logLevel }).toEqual({ format: 'json', level: 'warn' });
    expect(
      problemsOf({
        ...valid,
        PROJECTOR_METRICS_PORT: '-1',
        METRICS_HOST: 'metrics.local',
        LOG_FORMAT: 'yaml',
        LOG_LEVEL: 'loud',
      }),
    ).toEqual([
      'METRICS_HOST must be an IP address (e.g. 127.0.0.1 or 0.0.0.0), got "metrics.local"',
      'PROJECTOR_METRICS_PORT must be a TCP port (1-65535) or 0 for none, got "-1"',
      'LOG_FORMAT must be one of json, pretty, got "yaml"',
      'LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, got "loud"',
    ]);
  });

  it('trusts no proxy unless TRUSTED_PROXY_HOPS says how many', () => {
    expect(loadConfig(valid).trustedProxyHops).toBe(0);
    expect(loadConfig({ ...valid, TRUSTED_PROXY_HOPS: '2' }).trustedProxyHops).toBe(2);
    expect(problemsOf({ ...valid, TRUSTED_PROXY_HOPS: 'yes' })).toEqual([
      expect.stringContaining('TRUSTED_PROXY_HOPS'),
    ]);
  });
});
