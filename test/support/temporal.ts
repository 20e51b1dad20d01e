import { Client, Connection } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { requireTemporalAddress, temporalConnectionOptions, type AppConfig } from '#libs/config';
import { AesGcmPayloadCodec, payloadDataConverter } from '#libs/temporal';

/** A Temporal connection as the apps make it: TLS and authentication as configured (TEMPORAL_TLS*,
 * TEMPORAL_API_KEY), so the tests run against the cluster profile's mTLS frontend too. */
export function connectTemporalRaw(config: AppConfig): Promise<Connection> {
  return Connection.connect({
    address: requireTemporalAddress(config),
    ...temporalConnectionOptions(config.engines.temporal),
  });
}

/** A Temporal client as the apps build it (payloads encrypted under the configured keys). */
export async function connectTemporal(config: AppConfig): Promise<{ client: Client; connection: Connection }> {
  const connection = await connectTemporalRaw(config);
  return {
    connection,
    client: new Client({
      connection,
      namespace: config.temporal.namespace,
      dataConverter: payloadDataConverter(config),
    }),
  };
}

/** Every payload of a fetched history (workflow input, results, updates, signals, search attributes). */
export function payloadsOf(value: unknown, found: Payload[] = []): Payload[] {
  if (typeof value !== 'object' || value === null || value instanceof Uint8Array) return found;
  const v = value as { metadata?: unknown; data?: unknown };
  if (v.data instanceof Uint8Array && typeof v.metadata === 'object' && v.metadata !== null) found.push(v as Payload);
  else for (const child of Object.values(value)) payloadsOf(child, found);
  return found;
}

const text = (payload: Payload): string =>
  [...Object.values(payload.metadata ?? {}), payload.data ?? new Uint8Array()]
    .map((b) => Buffer.from(b ?? new Uint8Array()).toString('utf8'))
    .join('\n');

/** The history's payloads as text, as stored (`codec` undefined) or decrypted. */
export async function historyText(history: unknown, codec?: AesGcmPayloadCodec): Promise<string> {
  const payloads = payloadsOf(history);
  return (codec ? await codec.decode(payloads) : payloads).map(text).join('\n');
}
