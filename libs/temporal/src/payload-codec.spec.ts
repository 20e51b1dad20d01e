import { defaultPayloadConverter, METADATA_ENCODING_KEY, type Payload } from '@temporalio/common';
import {
  AesGcmPayloadCodec,
  ENCRYPTED_ENCODING,
  METADATA_ENCRYPTION_KEY_ID,
  payloadFromJson,
  payloadToJson,
} from './payload-codec.js';

const keyA = Buffer.alloc(32, 1);
const keyB = Buffer.alloc(32, 2);
const text = (bytes: Uint8Array | null | undefined): string => Buffer.from(bytes ?? new Uint8Array()).toString('utf8');
const message = { message: 'The secret launch date is 2027-03-14' };

describe('AesGcmPayloadCodec', () => {
  const underA = new AesGcmPayloadCodec(new Map([['a', keyA]]), 'a');

  it('encrypts the whole payload under the current key and names the key in the metadata', async () => {
    const plain = defaultPayloadConverter.toPayload(message);
    const [encrypted] = await underA.encode([plain]);
    expect(text(encrypted!.metadata![METADATA_ENCODING_KEY])).toBe(ENCRYPTED_ENCODING);
    expect(text(encrypted!.metadata![METADATA_ENCRYPTION_KEY_ID])).toBe('a');
    expect(Buffer.from(encrypted!.data!).toString('latin1')).not.toContain('launch');
    expect(Buffer.from(encrypted!.data!).toString('latin1')).not.toContain('json/plain');
    const [decoded] = await underA.decode([encrypted!]);
    expect(defaultPayloadConverter.fromPayload(decoded!)).toEqual(message);
  });

  it('uses a fresh IV each time', async () => {
    const plain = defaultPayloadConverter.toPayload(message);
    const [one, two] = await underA.encode([plain, plain]);
    expect(Buffer.from(one!.data!).equals(Buffer.from(two!.data!))).toBe(false);
  });

  it('after a rotation, encrypts under the new key and still decrypts under the old one', async () => {
    const [old] = await underA.encode([defaultPayloadConverter.toPayload(message)]);
    const rotated = new AesGcmPayloadCodec(
      new Map([
        ['a', keyA],
        ['b', keyB],
      ]),
      'b',
    );
    const [fresh] = await rotated.encode([defaultPayloadConverter.toPayload(message)]);
    expect(text(fresh!.metadata![METADATA_ENCRYPTION_KEY_ID])).toBe('b');
    const decoded = await rotated.decode([old!, fresh!]);
    expect(decoded.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([message, message]);
  });

  it('refuses a payload under an unknown key, or one that was tampered with, naming the key only', async () => {
    const [encrypted] = await underA.encode([defaultPayloadConverter.toPayload(message)]);
    const onlyB = new AesGcmPayloadCodec(new Map([['b', keyB]]), 'b');
    await expect(onlyB.decode([encrypted!])).rejects.toThrow(
      'An encrypted payload names the key "a", which is not configured (MAS_PAYLOAD_KEYS)',
    );
    const data = Buffer.from(encrypted!.data!);
    data[20] = data[20]! ^ 1;
    await expect(underA.decode([{ ...encrypted!, data }])).rejects.toThrow(
      'An encrypted payload does not authenticate under the key "a"',
    );
  });

  it('passes a payload that is not encrypted through decode (histories written before encryption)', async () => {
    const plain = defaultPayloadConverter.toPayload(message);
    await expect(underA.decode([plain])).resolves.toEqual([plain]);
  });

  it('refuses a current key that is not configured', () => {
    expect(() => new AesGcmPayloadCodec(new Map([['a', keyA]]), 'b')).toThrow('"b"');
  });
});

describe('codec-server JSON', () => {
  it('round-trips a payload through base64 fields', () => {
    const payload: Payload = defaultPayloadConverter.toPayload(message);
    const json = payloadToJson(payload);
    expect(json.metadata).toEqual({ encoding: Buffer.from('json/plain').toString('base64') });
    expect(defaultPayloadConverter.fromPayload(payloadFromJson(json))).toEqual(message);
  });
});
