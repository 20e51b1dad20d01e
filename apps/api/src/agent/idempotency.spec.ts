import { canonicalJson } from './idempotency.js';

describe('canonicalJson', () => {
  it('is the same for the same parsed body whatever the key order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: null } })).toBe(canonicalJson({ a: { c: null, d: [1, { x: 1, y: 2 }] }, b: 1 }));
  });

  it('differs when a value differs', () => {
    expect(canonicalJson({ message: 'a' })).not.toBe(canonicalJson({ message: 'b' }));
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });
});
