import { parseInline, parseMarkdown, toWinAnsi } from './markdown.parser.js';

describe('parseMarkdown', () => {
  it('reads headings, paragraphs, lists, code, quotes, rules and tables', () => {
    const markdown = [
      '# Quarterly report',
      '',
      'Sales grew **12%**',
      'over the quarter.',
      '',
      '## Highlights ##',
      '- North up',
      '  - Oslo best',
      '* South flat',
      '  continued line',
      '',
      '1. First',
      '2) Second',
      '',
      '```js',
      'const x = 1;',
      '',
      '```',
      '> Quoted',
      '> words',
      '',
      '---',
      '| Region | Sales |',
      '|:--|--:|',
      '| North | 10 |',
      '| a\\|b | 2 |',
    ].join('\n');
    expect(parseMarkdown(markdown)).toEqual([
      { kind: 'heading', level: 1, spans: [{ text: 'Quarterly report' }] },
      { kind: 'paragraph', spans: [{ text: 'Sales grew ' }, { text: '12%', bold: true }, { text: ' over the quarter.' }] },
      { kind: 'heading', level: 2, spans: [{ text: 'Highlights' }] },
      {
        kind: 'list',
        items: [
          { depth: 0, marker: '•', spans: [{ text: 'North up' }] },
          { depth: 1, marker: '•', spans: [{ text: 'Oslo best' }] },
          { depth: 0, marker: '•', spans: [{ text: 'South flat continued line' }] },
        ],
      },
      {
        kind: 'list',
        items: [
          { depth: 0, marker: '1.', spans: [{ text: 'First' }] },
          { depth: 0, marker: '2.', spans: [{ text: 'Second' }] },
        ],
      },
      { kind: 'code', text: 'const x = 1;\n' },
      { kind: 'quote', spans: [{ text: 'Quoted words' }] },
      { kind: 'rule' },
      { kind: 'table', rows: [['Region', 'Sales'], ['North', '10'], ['a|b', '2']] },
    ]);
  });

  it('keeps an unterminated code fence to the end and treats lone pipes as text', () => {
    expect(parseMarkdown('```\ncode\nmore')).toEqual([{ kind: 'code', text: 'code\nmore' }]);
    expect(parseMarkdown('| not a table |')).toEqual([{ kind: 'paragraph', spans: [{ text: '| not a table |' }] }]);
  });

  it('returns nothing for blank input', () => {
    expect(parseMarkdown('\n  \n')).toEqual([]);
  });
});

describe('parseInline', () => {
  it('reads emphasis, code, links and images', () => {
    expect(parseInline('a **b *c* d** _d_ `e*f` [g](https://g.example) ![h](i.png) snake_case_name')).toEqual([
      { text: 'a ' },
      { text: 'b ', bold: true },
      { text: 'c', bold: true, italic: true },
      { text: ' d', bold: true },
      { text: ' ' },
      { text: 'd', italic: true },
      { text: ' ' },
      { text: 'e*f', code: true },
      { text: ' g (https://g.example) h snake_case_name' },
    ]);
  });

  it('shows a link whose text is its address once', () => {
    expect(parseInline('[https://a.example](https://a.example)')).toEqual([{ text: 'https://a.example' }]);
  });
});

describe('toWinAnsi', () => {
  it('keeps Latin-1 and WinAnsi punctuation, substitutes common symbols, and marks the rest', () => {
    expect(toWinAnsi('Café – “naïve” € • 5 ≥ 3 → ok')).toBe('Café – “naïve” € • 5 >= 3 -> ok');
    expect(toWinAnsi('中文 😀')).toBe('?? ?');
    expect(toWinAnsi('a\u0007b\tc\n')).toBe('ab\tc\n');
  });
});
