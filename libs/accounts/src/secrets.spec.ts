import {
  decryptSecret,
  displayPrefix,
  encryptSecret,
  generateApiKey,
  hashApiKey,
  hashesEqual,
  isWellFormedApiKey,
} from './secrets.js';

const pepper = Buffer.alloc(32, 1);
const masterKey = Buffer.alloc(32, 2);

describe('API keys', () => {
  it('have the form sk-mas_<43 base62> and differ every time', () => {
    const keys = new Set(Array.from({ length: 200 }, generateApiKey));
    expect(keys.size).toBe(200);
    for (const key of keys) expect(key).toMatch(/^sk-mas_[0-9A-Za-z]{43}$/);
  });

  it('are recognised as well formed only in that form', () => {
    expect(isWellFormedApiKey(generateApiKey())).toBe(true);
    expect(isWellFormedApiKey('sk-mas_short')).toBe(false);
    expect(isWellFormedApiKey(`sk-other_${'a'.repeat(43)}`)).toBe(false);
    expect(isWellFormedApiKey(`sk-mas_${'a'.repeat(42)}!`)).toBe(false);
  });

  it('hash deterministically under the pepper, differently under another', () => {
    const key = generateApiKey();
    expect(hashesEqual(hashApiKey(key, pepper), hashApiKey(key, pepper))).toBe(true);
    expect(hashesEqual(hashApiKey(key, pepper), hashApiKey(key, Buffer.alloc(32, 9)))).toBe(false);
    expect(hashApiKey(key, pepper).toString('latin1')).not.toContain(key.slice(7));
  });

  it('show only a short prefix', () => {
    expect(displayPrefix('sk-mas_AbCdEfGh')).toBe('sk-mas_AbCd');
  });
});

describe('model key encryption', () => {
  it('round-trips and keeps no plaintext in the ciphertext', () => {
    const sealed = encryptSecret('sk-live-provider-key', masterKey, 'project-1');
    expect(sealed.toString('latin1')).not.toContain('sk-live-provider-key');
    expect(decryptSecret(sealed, masterKey, 'project-1')).toBe('sk-live-provider-key');
  });

  it('refuses another context, another key, or a tampered ciphertext', () => {
    const sealed = encryptSecret('secret', masterKey, 'project-1');
    expect(() => decryptSecret(sealed, masterKey, 'project-2')).toThrow();
    expect(() => decryptSecret(sealed, Buffer.alloc(32, 3), 'project-1')).toThrow();
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1] ^= 1;
    expect(() => decryptSecret(tampered, masterKey, 'project-1')).toThrow();
  });
});
