import { ServiceError } from '#libs/contracts';
import { parseIdempotencyKey } from './idempotency.js';

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
