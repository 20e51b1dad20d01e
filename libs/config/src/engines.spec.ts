import { ConfigError, loadConfig } from './config.js';
import { kafkaConnectionOptions, temporalConnectionOptions } from './engine-options.js';

const key = Buffer.alloc(32, 7).toString('base64');
const valid = {
  DATABASE_URL: 'postgres://mas@127.0.0.1:55432/mas',
  KAFKA_BROKERS: '127.0.0.1:19092',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  MAS_MASTER_KEY: key,
  MAS_API_KEY_PEPPER: key,
  MAS_PAYLOAD_KEYS: `k1:${key}`,
};
const API_KEY = 'tcld-ak-0123456789abcdef0123456789abcdef';

function problemsOf(env: Record<string, string | undefined>): readonly string[] {
  try {
    loadConfig({ ...valid, ...env });
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

/** Reads "files" from a map, so that the options can be checked without touching the disk. */
const files = (contents: Record<string, string>) => (path: string) => {
  if (!(path in contents)) throw new Error(`ENOENT: ${path}`);
  return Buffer.from(contents[path]!);
};

describe('managed engines: Temporal', () => {
  it('stays plaintext by default (the local stack)', () => {
    const { temporal } = loadConfig(valid).engines;
    expect(temporal).toEqual({
      tls: false,
      caFile: undefined,
      clientCertFile: undefined,
      clientKeyFile: undefined,
      serverName: undefined,
      apiKey: undefined,
    });
    expect(temporalConnectionOptions(temporal, files({}))).toEqual({});
  });

  it('takes a Temporal Cloud API key, over TLS against the system roots', () => {
    const { temporal } = loadConfig({
      ...valid,
      TEMPORAL_ADDRESS: 'acme.a1b2c.tmprl.cloud:7233',
      TEMPORAL_NAMESPACE: 'acme.a1b2c',
      TEMPORAL_API_KEY: API_KEY,
    }).engines;
    expect(temporal).toMatchObject({ tls: true, apiKey: API_KEY, caFile: undefined });
    expect(temporalConnectionOptions(temporal, files({}))).toEqual({ tls: {}, apiKey: API_KEY });
  });

  it('takes mTLS: a client certificate and key, a CA and a server name', () => {
    const { temporal } = loadConfig({
      ...valid,
      TEMPORAL_TLS_CA_FILE: '/tls/ca.pem',
      TEMPORAL_TLS_CERT_FILE: '/tls/client.pem',
      TEMPORAL_TLS_KEY_FILE: '/tls/client.key',
      TEMPORAL_TLS_SERVER_NAME: 'temporal-frontend',
    }).engines;
    expect(temporal).toEqual({
      tls: true,
      caFile: '/tls/ca.pem',
      clientCertFile: '/tls/client.pem',
      clientKeyFile: '/tls/client.key',
      serverName: 'temporal-frontend',
      apiKey: undefined,
    });
    expect(
      temporalConnectionOptions(
        temporal,
        files({ '/tls/ca.pem': 'CA', '/tls/client.pem': 'CRT', '/tls/client.key': 'KEY' }),
      ),
    ).toEqual({
      tls: {
        serverNameOverride: 'temporal-frontend',
        serverRootCACertificate: Buffer.from('CA'),
        clientCertPair: { crt: Buffer.from('CRT'), key: Buffer.from('KEY') },
      },
    });
    expect(loadConfig({ ...valid, TEMPORAL_TLS: 'true' }).engines.temporal.tls).toBe(true);
  });

  it('refuses a half pair, TLS off with TLS settings, two ways to authenticate, and a short key, without printing the key', () => {
    expect(problemsOf({ TEMPORAL_TLS_CERT_FILE: '/tls/client.pem' })).toEqual([
      'TEMPORAL_TLS_CERT_FILE and TEMPORAL_TLS_KEY_FILE go together (a client certificate and its key): set both or neither',
    ]);
    expect(problemsOf({ TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: API_KEY })).toEqual([
      'TEMPORAL_TLS is false but TEMPORAL_API_KEY needs TLS',
    ]);
    expect(problemsOf({ TEMPORAL_TLS: 'yes' })).toEqual(['TEMPORAL_TLS must be true or false, got "yes"']);
    expect(
      problemsOf({ TEMPORAL_API_KEY: API_KEY, TEMPORAL_TLS_CERT_FILE: '/c', TEMPORAL_TLS_KEY_FILE: '/k' }),
    ).toEqual(['TEMPORAL_API_KEY and TEMPORAL_TLS_CERT_FILE are two ways to authenticate: set one']);
    const short = problemsOf({ TEMPORAL_API_KEY: 'abc def' });
    expect(short).toEqual(['TEMPORAL_API_KEY must be at least 16 printable characters without spaces']);
    expect(short.join()).not.toContain('abc');
  });
});

describe('managed engines: Kafka', () => {
  it('stays plaintext by default (the local stack)', () => {
    const { kafka } = loadConfig(valid).engines;
    expect(kafka).toEqual({
      ssl: false,
      caFile: undefined,
      clientCertFile: undefined,
      clientKeyFile: undefined,
      sasl: undefined,
    });
    expect(kafkaConnectionOptions(kafka, files({}))).toEqual({});
  });

  it('takes SASL/PLAIN over SSL as Confluent Cloud asks, SSL implied', () => {
    const { kafka } = loadConfig({
      ...valid,
      KAFKA_SASL_MECHANISM: 'PLAIN',
      KAFKA_SASL_USERNAME: 'ABCKEY',
      KAFKA_SASL_PASSWORD: ' s3cret ',
    }).engines;
    expect(kafka).toMatchObject({ ssl: true, sasl: { mechanism: 'plain', username: 'ABCKEY', password: ' s3cret ' } });
    expect(kafkaConnectionOptions(kafka, files({}))).toEqual({
      ssl: true,
      sasl: { mechanism: 'plain', username: 'ABCKEY', password: ' s3cret ' },
    });
  });

  it('takes SASL/SCRAM with a CA (Amazon MSK, Strimzi), and mTLS', () => {
    const scram = loadConfig({
      ...valid,
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'mas',
      KAFKA_SASL_PASSWORD: 'pw',
      KAFKA_SSL_CA_FILE: '/tls/kafka-ca.pem',
    }).engines.kafka;
    expect(kafkaConnectionOptions(scram, files({ '/tls/kafka-ca.pem': 'CA' }))).toEqual({
      ssl: { ca: [Buffer.from('CA')] },
      sasl: { mechanism: 'scram-sha-512', username: 'mas', password: 'pw' },
    });
    const mtls = loadConfig({
      ...valid,
      KAFKA_SSL_CA_FILE: '/ca',
      KAFKA_SSL_CERT_FILE: '/crt',
      KAFKA_SSL_KEY_FILE: '/key',
    }).engines.kafka;
    expect(kafkaConnectionOptions(mtls, files({ '/ca': 'CA', '/crt': 'CRT', '/key': 'KEY' }))).toEqual({
      ssl: { ca: [Buffer.from('CA')], cert: Buffer.from('CRT'), key: Buffer.from('KEY') },
    });
    // SASL_PLAINTEXT only when asked for.
    const clear = loadConfig({
      ...valid,
      KAFKA_SSL: 'false',
      KAFKA_SASL_MECHANISM: 'scram-sha-256',
      KAFKA_SASL_USERNAME: 'mas',
      KAFKA_SASL_PASSWORD: 'pw',
    }).engines.kafka;
    expect(kafkaConnectionOptions(clear, files({}))).toEqual({
      sasl: { mechanism: 'scram-sha-256', username: 'mas', password: 'pw' },
    });
  });

  it('refuses an unknown mechanism, missing credentials, credentials without a mechanism and SSL off with SSL files, never naming the password', () => {
    expect(
      problemsOf({ KAFKA_SASL_MECHANISM: 'aws_msk_iam', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'hunter22' }),
    ).toEqual(['KAFKA_SASL_MECHANISM must be one of plain, scram-sha-256, scram-sha-512, got "aws_msk_iam"']);
    expect(problemsOf({ KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u' })).toEqual([
      'KAFKA_SASL_MECHANISM plain needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD',
    ]);
    const orphan = problemsOf({ KAFKA_SASL_PASSWORD: 'hunter22' });
    expect(orphan).toEqual([
      'KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD need KAFKA_SASL_MECHANISM (plain, scram-sha-256 or scram-sha-512)',
    ]);
    expect(orphan.join()).not.toContain('hunter22');
    expect(problemsOf({ KAFKA_SSL: 'false', KAFKA_SSL_CA_FILE: '/ca' })).toEqual([
      'KAFKA_SSL is false but KAFKA_SSL_CA_FILE needs SSL',
    ]);
    expect(problemsOf({ KAFKA_SSL_KEY_FILE: '/key' })).toEqual([
      'KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE go together (a client certificate and its key): set both or neither',
    ]);
  });
});

describe('managed engines: PostgreSQL', () => {
  it("passes DATABASE_URL's TLS parameters through to node-postgres untouched", () => {
    const url =
      'postgres://mas:pw@db.example.com:5432/mas?sslmode=verify-full&sslrootcert=/etc/mas/tls/postgres/ca.crt';
    expect(loadConfig({ ...valid, DATABASE_URL: url }).databaseUrl).toBe(url);
  });
});
