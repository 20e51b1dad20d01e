import { readFileSync } from 'node:fs';
import type { KafkaSecurity, TemporalSecurity } from './engines.js';

type ReadFile = (path: string) => Buffer;

/** The TLS and API-key options of a Temporal connection (client Connection and the worker's
 * NativeConnection take the same shape); the PEM files are read now, when a connection is made. */
export function temporalConnectionOptions(
  security: TemporalSecurity | undefined,
  read: ReadFile = readFileSync,
): {
  tls?: {
    serverNameOverride?: string;
    serverRootCACertificate?: Buffer;
    clientCertPair?: { crt: Buffer; key: Buffer };
  };
  apiKey?: string;
} {
  if (!security?.tls) return {};
  return {
    tls: {
      ...(security.serverName ? { serverNameOverride: security.serverName } : {}),
      ...(security.caFile ? { serverRootCACertificate: read(security.caFile) } : {}),
      ...(security.clientCertFile && security.clientKeyFile
        ? { clientCertPair: { crt: read(security.clientCertFile), key: read(security.clientKeyFile) } }
        : {}),
    },
    ...(security.apiKey ? { apiKey: security.apiKey } : {}),
  };
}

/** kafkajs's `ssl` and `sasl` options; the PEM files are read now, when a client is made. */
export function kafkaConnectionOptions(
  security: KafkaSecurity | undefined,
  read: ReadFile = readFileSync,
): {
  ssl?: true | { ca?: Buffer[]; cert?: Buffer; key?: Buffer };
  sasl?: KafkaSecurity['sasl'];
} {
  if (!security) return {};
  const files = security.caFile || security.clientCertFile;
  const ssl = !security.ssl
    ? undefined
    : files
      ? {
          ...(security.caFile ? { ca: [read(security.caFile)] } : {}),
          ...(security.clientCertFile && security.clientKeyFile
            ? { cert: read(security.clientCertFile), key: read(security.clientKeyFile) }
            : {}),
        }
      : (true as const);
  return { ...(ssl ? { ssl } : {}), ...(security.sasl ? { sasl: security.sasl } : {}) };
}
