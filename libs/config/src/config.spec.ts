import { ConfigError, loadConfig } from './config.js';

const key = Buffer.alloc(32, 7).toString('base64');
const valid = {
  DATABASE_URL: 'postgres://mas@127.0.0.1:55432/mas',
  KAFKA_BROKERS: '127.0.0.1:19092,127.0.0.2:19092',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  MAS_MASTER_KEY: key,
  MAS_API_KEY_PEPPER: key,
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
    expect(config.publicBaseUrl).toBe('http://localhost:3000');
    expect(config.kafkaBrokers).toEqual(['127.0.0.1:19092', '127.0.0.2:19092']);
    expect(config.temporal).toEqual({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'mas-agent', uiUrl: undefined, pickupTimeoutMs: 10000 });
    expect(config.masterKey).toHaveLength(32);
    expect(config.kafkaGroupPrefix).toBe('mas');
    expect(config.fetchUrlAllowHosts).toEqual([]);
    expect(loadConfig({ ...valid, FETCH_URL_ALLOW_HOSTS: 'intranet.example, 10.0.0.0/8' }).fetchUrlAllowHosts).toEqual(['intranet.example', '10.0.0.0/8']);
    expect(loadConfig({ ...valid, SESSION_IDLE_TIMEOUT_MS: '2000' }).sessions.idleTimeoutMs).toBe(2000);
    expect(problemsOf({ ...valid, SESSION_IDLE_TIMEOUT_MS: 'soon' })).toEqual([expect.stringContaining('SESSION_IDLE_TIMEOUT_MS')]);
  });

  it('names every missing variable at once', () => {
    expect(problemsOf({})).toEqual([
      'DATABASE_URL is required but not set',
      'KAFKA_BROKERS is required but not set',
      'MAS_MASTER_KEY is required but not set',
      'MAS_API_KEY_PEPPER is required but not set',
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
    const config = loadConfig({ ...valid, MAS_PLANS: '{"free":{"monthlyQuota":5,"capabilities":["chat"]}}', MAS_CAPABILITY_SURCHARGES: '{"code":3}' });
    expect(config.plans.free).toEqual({ name: 'free', monthlyQuota: 5, capabilities: ['chat'] });
    expect(config.plans.pro.monthlyQuota).toBe(50000);
    expect(config.capabilitySurcharges).toEqual({ chat: 0, research: 2, documents: 0, code: 3, data: 1, files: 0 });
    expect(problemsOf({ ...valid, MAS_PLANS: '{"gold":{}}' })).toEqual(['MAS_PLANS: unknown plan "gold" (plans: free, starter, pro)']);
    expect(problemsOf({ ...valid, MAS_CAPABILITY_SURCHARGES: '{' })).toEqual(['MAS_CAPABILITY_SURCHARGES must be JSON']);
  });

  it('strips a trailing slash from PUBLIC_BASE_URL', () => {
    expect(loadConfig({ ...valid, PUBLIC_BASE_URL: 'https://agents.example.com/' }).publicBaseUrl).toBe('https://agents.example.com');
  });
});
