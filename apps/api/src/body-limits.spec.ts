import { jsonDepth, MAX_BODY_DEPTH } from './body-limits.js';

describe('jsonDepth', () => {
  it('counts the nesting of arrays and objects, strings and numbers as leaves', () => {
    expect(jsonDepth('text')).toBe(0);
    expect(jsonDepth({ message: 'hi', files: [{ name: 'a', content: 'x' }] })).toBe(3);
  });

  it('stops counting past the limit, without recursion', () => {
    let deep: unknown = {};
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(jsonDepth(deep)).toBe(MAX_BODY_DEPTH + 1);
  });

  // Issue 28: a content handed back as bytes by the JSON thread was walked byte by byte here,
  // 75-206 ms of the api's event loop for an 8 MB request (a CPU profile of the noisy-neighbour
  // phase).
  it("counts a file's content handed back as bytes as the string it was: a leaf", () => {
    const content = new Uint8Array(1_000_000);
    expect(jsonDepth({ message: 'hi', files: [{ name: 'a', content }] })).toBe(3);
  });
});
