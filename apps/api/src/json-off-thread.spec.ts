import { bodyHash, canonicalJson } from './json-off-thread.js';

// Pure: the module's thread starts only when a JsonThread parses.
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
