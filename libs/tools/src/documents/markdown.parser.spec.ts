import { parseInline, parseMarkdown, toWinAnsi } from './markdown.parser.js';

describe('parseMarkdown', () => {
  it('reads headings, paragraphs, lists, code, quotes, rules and tables (CommonMark with GFM tables)', () => {
    const markdown = [
      '# Quarterly report',
      '',
      'Sales grew **12%**',
      'over the quarter.',
      '',
      '## Highlights ##',
      '- North up',
      '  - Oslo best',
      '- South flat',
      '  continued line',
      '',
      '1. First',
      '2. Second',
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
      {
        kind: 'paragraph',
        spans: [{ text: 'Sales grew ' }, { text: '12%', bold: true }, { text: ' over the quarter.' }],
      },
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
      { kind: 'code', text: 'const x = 1;' },
      { kind: 'quote', spans: [{ text: 'Quoted words' }] },
      { kind: 'rule' },
      {
        kind: 'table',
        rows: [
          ['Region', 'Sales'],
          ['North', '10'],
          ['a|b', '2'],
        ],
      },
    ]);
  });

  it('nests lists three deep, ordered inside bulleted, numbering from the list start, with task items', () => {
    // (An ordered list that interrupts a paragraph must start at 1, so the start shows at the top level.)
    const markdown = [
      '- Plan',
      '  1. Draft',
      '  2. Review',
      '     - with **legal**',
      '- [x] Done',
      '- [ ] Open',
      '',
      '3. Third',
      '4. Fourth',
    ].join('\n');
    expect(parseMarkdown(markdown)).toEqual([
      {
        kind: 'list',
        items: [
          { depth: 0, marker: '•', spans: [{ text: 'Plan' }] },
          { depth: 1, marker: '1.', spans: [{ text: 'Draft' }] },
          { depth: 1, marker: '2.', spans: [{ text: 'Review' }] },
          { depth: 2, marker: '•', spans: [{ text: 'with ' }, { text: 'legal', bold: true }] },
          { depth: 0, marker: '[x]', spans: [{ text: 'Done' }] },
          { depth: 0, marker: '[ ]', spans: [{ text: 'Open' }] },
        ],
      },
      {
        kind: 'list',
        items: [
          { depth: 0, marker: '3.', spans: [{ text: 'Third' }] },
          { depth: 0, marker: '4.', spans: [{ text: 'Fourth' }] },
        ],
      },
    ]);
  });

  it('keeps a code fence and a second paragraph inside their list item', () => {
    const markdown = ['1. Install:', '', '   ```sh', '   npm ci', '   ```', '', '   Then run it.', '2. Done'].join(
      '\n',
    );
    expect(parseMarkdown(markdown)).toEqual([
      {
        kind: 'list',
        items: [
          { depth: 0, marker: '1.', spans: [{ text: 'Install:' }] },
          { depth: 0, marker: '', spans: [{ text: 'npm ci', code: true }] },
          { depth: 0, marker: '', spans: [{ text: 'Then run it.' }] },
          { depth: 0, marker: '2.', spans: [{ text: 'Done' }] },
        ],
      },
    ]);
  });

  it('reads tilde fences, indented code, setext headings, hard breaks, entities and HTML blocks', () => {
    const markdown = [
      'Title',
      '=====',
      '',
      '~~~',
      '<raw> & **not bold**',
      '~~~',
      '',
      '    indented()',
      '',
      'line one\\',
      'line two &amp; &copy; &#8364;',
      '',
      '<div>html <b>block</b></div>',
    ].join('\n');
    expect(parseMarkdown(markdown)).toEqual([
      { kind: 'heading', level: 1, spans: [{ text: 'Title' }] },
      { kind: 'code', text: '<raw> & **not bold**' },
      { kind: 'code', text: 'indented()' },
      { kind: 'paragraph', spans: [{ text: 'line one\nline two & © €' }] },
      { kind: 'paragraph', spans: [{ text: 'html block' }] },
    ]);
  });

  it('reads a quote holding a list, and formatting and links inside table cells', () => {
    const markdown = [
      '> Note:',
      '> - one',
      '> - two',
      '',
      '| Name | Link |',
      '|---|---|',
      '| **Bold** | [site](https://s.example) |',
    ].join('\n');
    expect(parseMarkdown(markdown)).toEqual([
      { kind: 'quote', spans: [{ text: 'Note:\n• one\n• two' }] },
      {
        kind: 'table',
        rows: [
          ['Name', 'Link'],
          ['Bold', 'site (https://s.example)'],
        ],
      },
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

  it('shows a link whose text is its address once, autolinks included', () => {
    expect(parseInline('[https://a.example](https://a.example)')).toEqual([{ text: 'https://a.example' }]);
    expect(parseInline('see https://b.example and <mail@c.example>')).toEqual([
      { text: 'see https://b.example and mail@c.example' },
    ]);
  });

  it('reads reference links, strikethrough, escapes and inline HTML', () => {
    expect(parseInline('[docs][d] ~~old~~ \\*not em\\* <span>kept</span>')).toEqual([
      { text: '[docs][d] old *not em* kept' },
    ]);
    expect(parseMarkdown('[docs][d]\n\n[d]: https://d.example')).toEqual([
      { kind: 'paragraph', spans: [{ text: 'docs (https://d.example)' }] },
    ]);
  });
});

describe('toWinAnsi', () => {
  it('keeps Latin-1 and WinAnsi punctuation, substitutes common symbols, and marks the rest', () => {
    expect(toWinAnsi('Café – “naïve” € • 5 ≥ 3 → ok')).toBe('Café – “naïve” € • 5 >= 3 -> ok');
    expect(toWinAnsi('中文 😀')).toBe('?? ?');
    expect(toWinAnsi('a\u0007b\tc\n')).toBe('ab\tc\n');
  });
});
