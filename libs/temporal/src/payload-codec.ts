import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import {
  METADATA_ENCODING_KEY,
  ValueError,
  type DataConverter,
  type Payload,
  type PayloadCodec,
} from '@temporalio/common';
import proto from '@temporalio/proto';
import type { AppConfig } from '#libs/config';

/** The `encoding` of an encrypted payload (as in Temporal's encryption sample). */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** The metadata key that names the key a payload was encrypted under. */
export const METADATA_ENCRYPTION_KEY_ID = 'encryption-key-id';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const utf8 = new TextEncoder();
const text = (bytes: Uint8Array | null | undefined): string | undefined =>
  bytes ? Buffer.from(bytes).toString('utf8') : undefined;

/**
 * Encrypts every Temporal payload with AES-256-GCM: the whole payload (its metadata and data) is
 * serialised and sealed under the current key, `iv || ciphertext || tag`, and the key id travels
 * in the outer metadata, so a payload written under an older key still decrypts while that key is
 * configured. Follows temporalio/samples-typescript `encryption/` (same encoding, metadata and
 * layout), with node:crypto's synchronous cipher. A payload that is not encrypted passes through
 * decode unchanged (histories written before encryption was turned on).
 */
export class AesGcmPayloadCodec implements PayloadCodec {
  /** The keys as KeyObjects, made once: Node 24 turns a Buffer key into one on every cipher, which
   * made each payload's seal about 2.5 times slower (issue 16). */
  private readonly keys: ReadonlyMap<string, KeyObject>;

  constructor(
    keys: ReadonlyMap<string, Buffer>,
    private readonly currentKeyId: string,
  ) {
    if (!keys.has(currentKeyId))
      throw new Error(`the current payload key "${currentKeyId}" is not among the configured keys`);
    this.keys = new Map([...keys].map(([id, key]) => [id, createSecretKey(key)]));
  }

  /** The codec of the configured payload keys (MAS_PAYLOAD_KEYS, MAS_PAYLOAD_KEY_CURRENT). */
  static fromConfig(config: Pick<AppConfig, 'payloadKeys'>): AesGcmPayloadCodec {
    return new AesGcmPayloadCodec(config.payloadKeys.keys, config.payloadKeys.current);
  }

  // async: a failure rejects (as PayloadCodec callers expect) rather than throwing
  async encode(payloads: Payload[]): Promise<Payload[]> {
    const key = this.keys.get(this.currentKeyId)!;
    return payloads.map((payload) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      const plain = proto.temporal.api.common.v1.Payload.encode(payload).finish();
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: {
          [METADATA_ENCODING_KEY]: utf8.encode(ENCRYPTED_ENCODING),
          [METADATA_ENCRYPTION_KEY_ID]: utf8.encode(this.currentKeyId),
        },
        data: new Uint8Array(sealed),
      };
    });
  }

  // async: a failure rejects (as PayloadCodec callers expect) rather than throwing
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.decodeOne(payload));
  }

  private decodeOne(payload: Payload): Payload {
    if (text(payload.metadata?.[METADATA_ENCODING_KEY]) !== ENCRYPTED_ENCODING) return payload;
    const keyId = text(payload.metadata?.[METADATA_ENCRYPTION_KEY_ID]);
    if (!keyId) throw new ValueError('An encrypted payload has no encryption key id');
    const key = this.keys.get(keyId);
    if (!key)
      throw new ValueError(`An encrypted payload names the key "${keyId}", which is not configured (MAS_PAYLOAD_KEYS)`);
    const data = payload.data;
    if (!data || data.length < IV_BYTES + TAG_BYTES) throw new ValueError('An encrypted payload is too short');
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new ValueError(`An encrypted payload does not authenticate under the key "${keyId}"`);
    }
    return proto.temporal.api.common.v1.Payload.decode(plain);
  }
}

/** The module of the failure converter that encodes failure messages and stack traces (beside
 * this file, in the sources and in dist/, where the build copies it: tsconfig.build.json allowJs). */
export const FAILURE_CONVERTER_PATH = fileURLToPath(new URL('./failure-converter.cjs', import.meta.url));

/** The data converter of every Temporal client and worker of the service: payloads encrypted, and
 * failures' messages and stack traces with them (failure-converter.cjs). */
export function payloadDataConverter(config: Pick<AppConfig, 'payloadKeys'>): DataConverter {
  return { payloadCodecs: [AesGcmPayloadCodec.fromConfig(config)], failureConverterPath: FAILURE_CONVERTER_PATH };
}

/** A payload as Temporal's codec-server protocol carries it: metadata values and data in base64. */
export interface JsonPayload {
  metadata?: Record<string, string> | null;
  data?: string | null;
}

/** Reads a codec-server payload (proto JSON: base64 fields). */
export function payloadFromJson({ metadata, data }: JsonPayload): Payload {
  return {
    metadata: metadata
      ? Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]))
      : {},
    data: data ? new Uint8Array(Buffer.from(data, 'base64')) : new Uint8Array(),
  };
}

/** Writes a codec-server payload (proto JSON: base64 fields). */
export function payloadToJson({ metadata, data }: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(
      Object.entries(metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]),
    ),
    data: Buffer.from(data ?? new Uint8Array()).toString('base64'),
  };
}
