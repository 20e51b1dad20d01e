import fc from 'fast-check';
import { textProblem } from '../json-off-thread.js';
import { NOT_BLANK_TEXT, WELL_FORMED_TEXT } from './schemas.js';

// The document's text patterns say exactly what the validation takes (issue 29): a string matches
// them if and only if the api accepts it.
const matches = (rule: { allOf: readonly { pattern: string }[] }, value: string): boolean =>
  rule.allOf.every(({ pattern }) => new RegExp(pattern, 'u').test(value));
const text = fc.string({
  unit: fc.oneof(
    fc.constantFrom(
      '\u0000',
      '\ud800',
      '\udbff',
      '\udc00',
      '\udfff',
      '\u{1F680}',
      '\t',
      '\n',
      '\u000b',
      '\f',
      '\r',
      ' ',
      '\u00a0',
      '\u1680',
      '\u2000',
      '\u200a',
      '\u200b',
      '\u2028',
      '\u2029',
      '\u202f',
      '\u205f',
      '\u3000',
      '\ufeff',
      '\u0085',
      'a',
    ),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
    fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
  ),
  maxLength: 6,
});

describe("the OpenAPI document's text patterns", () => {
  it('match well-formed text exactly as textProblem accepts it', () => {
    fc.assert(
      fc.property(text, (value) => matches(WELL_FORMED_TEXT, value) === (textProblem(value) === undefined)),
      { numRuns: 5000 },
    );
  });

  it('match text that is not blank exactly as the message check accepts it (trim, then textProblem)', () => {
    fc.assert(
      fc.property(
        text,
        (value) => matches(NOT_BLANK_TEXT, value) === (value.trim() !== '' && textProblem(value) === undefined),
      ),
      { numRuns: 5000 },
    );
    for (const blank of ['', ' ', '\ufeff', '\u3000\n', '\u2028']) expect(matches(NOT_BLANK_TEXT, blank)).toBe(false);
    for (const ok of ['a', ' \u{1F680} ', '\u200b', '\u0085']) expect(matches(NOT_BLANK_TEXT, ok)).toBe(true);
  });
});
