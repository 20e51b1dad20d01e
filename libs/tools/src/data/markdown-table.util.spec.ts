import { markdownTable } from './markdown-table.util.js';

describe('markdownTable', () => {
  it('renders header, divider and rows; NULLs, JSON values, escaped pipes and flattened line breaks', () => {
    expect(
      markdownTable(
        ['name', 'tags', 'note'],
        [
          ['ann', ['a', 'b'], null],
          ['b|c', { x: 1 }, 'two\nlines'],
        ],
        50,
      ),
    ).toBe(
      ['| name | tags | note |', '|---|---|---|', '| ann | ["a","b"] | NULL |', '| b\\|c | {"x":1} | two lines |'].join(
        '\n',
      ),
    );
  });

  it('cuts long cells', () => {
    expect(markdownTable(['v'], [['abcdefghij']], 4)).toBe('| v |\n|---|\n| abcd… |');
  });
});
