// TLS and authentication to managed engines: Temporal Cloud (an API key, or mTLS), a Kafka cluster
// behind SSL and SASL (Amazon MSK, Confluent Cloud), read from the environment next to the rest of
// the configuration (config.ts) and documented in docs/deploy.md ("Managed engines"). PostgreSQL's
// TLS needs nothing here: node-postgres reads sslmode, sslrootcert, sslcert and sslkey from
// DATABASE_URL. Files are named here and read when a connection is made (engine-files.ts).

type Env = Readonly<Record<string, string | undefined>>;

/** How the apps reach Temporal beyond TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE. */
export interface TemporalSecurity {
  /** Off: plaintext (the local stack). On with no files: TLS against the system's roots (Temporal Cloud). */
  readonly tls: boolean;
  /** PEM file of the CA that signed the frontend's certificate (TEMPORAL_TLS_CA_FILE). */
  readonly caFile: string | undefined;
  /** PEM files of this client's certificate and key, for mTLS (TEMPORAL_TLS_CERT_FILE, TEMPORAL_TLS_KEY_FILE). */
  readonly clientCertFile: string | undefined;
  readonly clientKeyFile: string | undefined;
  /** The name the frontend's certificate is checked against, when not the address's host (TEMPORAL_TLS_SERVER_NAME). */
  readonly serverName: string | undefined;
  /** A Temporal Cloud API key (TEMPORAL_API_KEY): sent as a bearer token, over TLS only. */
  readonly apiKey: string | undefined;
}

export const KAFKA_SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;
export type KafkaSaslMechanism = (typeof KAFKA_SASL_MECHANISMS)[number];
/** One per mechanism, as kafkajs's SASLOptions is. */
export type KafkaSasl = {
  [M in KafkaSaslMechanism]: { readonly mechanism: M; readonly username: string; readonly password: string };
}[KafkaSaslMechanism];

/** How the apps reach Kafka beyond KAFKA_BROKERS. */
export interface KafkaSecurity {
  /** Off: plaintext. On with no files: TLS against the system's roots (MSK, Confluent Cloud). */
  readonly ssl: boolean;
  /** PEM files: the brokers' CA (KAFKA_SSL_CA_FILE), and a client certificate and key for mTLS. */
  readonly caFile: string | undefined;
  readonly clientCertFile: string | undefined;
  readonly clientKeyFile: string | undefined;
  /** SASL (KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD); undefined: none. */
  readonly sasl: KafkaSasl | undefined;
}

function value(env: Env, name: string): string | undefined {
  return env[name]?.trim() || undefined;
}

/** `true`, `false`, or unset (undefined); anything else is a problem. */
function flag(env: Env, name: string, problems: string[]): boolean | undefined {
  const raw = value(env, name)?.toLowerCase();
  if (raw === undefined) return undefined;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  problems.push(`${name} must be true or false, got "${raw}"`);
  return undefined;
}

function pair(env: Env, cert: string, key: string, problems: string[]): [string | undefined, string | undefined] {
  const c = value(env, cert);
  const k = value(env, key);
  if (!!c !== !!k)
    problems.push(`${cert} and ${key} go together (a client certificate and its key): set both or neither`);
  return [c, k];
}

/** TEMPORAL_TLS* and TEMPORAL_API_KEY. A CA, a client certificate or an API key turns TLS on;
 * TEMPORAL_TLS=false with any of them is refused, as is an API key with a client certificate. */
export function readTemporalSecurity(env: Env, problems: string[]): TemporalSecurity {
  const explicit = flag(env, 'TEMPORAL_TLS', problems);
  const caFile = value(env, 'TEMPORAL_TLS_CA_FILE');
  const [clientCertFile, clientKeyFile] = pair(env, 'TEMPORAL_TLS_CERT_FILE', 'TEMPORAL_TLS_KEY_FILE', problems);
  const serverName = value(env, 'TEMPORAL_TLS_SERVER_NAME');
  const apiKey = value(env, 'TEMPORAL_API_KEY');
  const needsTls = [
    caFile && 'TEMPORAL_TLS_CA_FILE',
    clientCertFile && 'TEMPORAL_TLS_CERT_FILE',
    serverName && 'TEMPORAL_TLS_SERVER_NAME',
    apiKey && 'TEMPORAL_API_KEY',
  ].filter(Boolean);
  if (explicit === false && needsTls.length > 0)
    problems.push(`TEMPORAL_TLS is false but ${needsTls.join(', ')} needs TLS`);
  if (apiKey && clientCertFile)
    problems.push('TEMPORAL_API_KEY and TEMPORAL_TLS_CERT_FILE are two ways to authenticate: set one');
  // The key must never reach a log line: its length and characters only.
  if (apiKey !== undefined && !/^[\x21-\x7e]{16,}$/.test(apiKey))
    problems.push('TEMPORAL_API_KEY must be at least 16 printable characters without spaces');
  return { tls: explicit ?? needsTls.length > 0, caFile, clientCertFile, clientKeyFile, serverName, apiKey };
}

/** KAFKA_SSL* and KAFKA_SASL_*. A CA or client certificate turns SSL on; so does SASL unless
 * KAFKA_SSL=false says SASL_PLAINTEXT (a password in the clear: only inside a private network). */
export function readKafkaSecurity(env: Env, problems: string[]): KafkaSecurity {
  const explicit = flag(env, 'KAFKA_SSL', problems);
  const caFile = value(env, 'KAFKA_SSL_CA_FILE');
  const [clientCertFile, clientKeyFile] = pair(env, 'KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE', problems);
  const files = [caFile && 'KAFKA_SSL_CA_FILE', clientCertFile && 'KAFKA_SSL_CERT_FILE'].filter(Boolean);
  if (explicit === false && files.length > 0) problems.push(`KAFKA_SSL is false but ${files.join(', ')} needs SSL`);

  const rawMechanism = value(env, 'KAFKA_SASL_MECHANISM')?.toLowerCase();
  const username = value(env, 'KAFKA_SASL_USERNAME');
  const password = env['KAFKA_SASL_PASSWORD'] || undefined; // a password may begin or end with spaces
  let sasl: KafkaSecurity['sasl'];
  if (rawMechanism === undefined) {
    if (username || password)
      problems.push(
        'KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD need KAFKA_SASL_MECHANISM (plain, scram-sha-256 or scram-sha-512)',
      );
  } else if (!(KAFKA_SASL_MECHANISMS as readonly string[]).includes(rawMechanism)) {
    problems.push(`KAFKA_SASL_MECHANISM must be one of ${KAFKA_SASL_MECHANISMS.join(', ')}, got "${rawMechanism}"`);
  } else if (!username || !password) {
    problems.push(`KAFKA_SASL_MECHANISM ${rawMechanism} needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD`);
  } else {
    sasl = { mechanism: rawMechanism as KafkaSaslMechanism, username, password };
  }
  return { ssl: explicit ?? (files.length > 0 || sasl !== undefined), caFile, clientCertFile, clientKeyFile, sasl };
}
