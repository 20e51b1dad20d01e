import { ServiceError } from '#libs/contracts';
import { bodyHash, canonicalJson, parseIdempotencyKey } from './idempotency.js';

describe('canonicalJson', () => {
  it('is the same for the same parsed body whatever the key order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: null } })).toBe(
      canonicalJson({ a: { c: null, d: [1, { x: 1, y: 2 }] }, b: 1 }),
    );
  });

  it('differs when a value differs', () => {
    expect(canonicalJson({ message: 'a' })).not.toBe(canonicalJson({ message: 'b' }));
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });
});

describe('bodyHash', () => {
  it('counts no body as an empty object', () => {
    expect(bodyHash(undefined)).toBe(bodyHash({}));
    expect(bodyHash({ a: 1 })).not.toBe(bodyHash({}));
  });
});

describe('parseIdempotencyKey', () => {
  const codeOf = (raw: string | string[] | undefined): string => {
    try {
      return parseIdempotencyKey(raw) ?? 'absent';
    } catch (e) {
      if (e instanceof ServiceError) return e.code;
      throw e;
    }
  };

  it('takes 1 to 255 characters without control characters', () => {
    expect(codeOf(undefined)).toBe('absent');
    expect(codeOf('order-42')).toBe('order-42');
    expect(codeOf('k'.repeat(255))).toBe('k'.repeat(255));
    expect(codeOf('clé élégante')).toBe('clé élégante');
  });

  it('refuses an empty key, a longer one, control characters and a repeated header as invalid_body', () => {
    for (const raw of ['', 'k'.repeat(256), 'a\tb', 'a\u0000b', 'a\u007fb', 'a\u0085b', ['a', 'b']])
      expect(codeOf(raw)).toBe('invalid_body');
  });
});
