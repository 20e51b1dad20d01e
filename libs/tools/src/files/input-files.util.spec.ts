import { describeInputFiles, findInputFile } from './input-files.util.js';
import { toolFileFromInput } from './tool-file.util.js';

describe('describeInputFiles', () => {
  it('lists names, types, sizes and SQL table names', () => {
    const files = [
      toolFileFromInput({ name: 'Sales 2024.csv', content: 'a,b\n1,2\n' }),
      toolFileFromInput({ name: 'scan.pdf', content: Buffer.alloc(2048).toString('base64') }),
      toolFileFromInput({ name: 'sales.json', content: '[]' }),
    ];
    expect(describeInputFiles(files)).toBe(
      [
        'Input files (3):',
        '- Sales 2024.csv (text/csv, 8 B; SQL table sales_2024)',
        '- scan.pdf (application/pdf, 2.0 KB)',
        '- sales.json (application/json, 2 B; SQL table sales)',
      ].join('\n'),
    );
  });

  it('says when there are none', () => {
    expect(describeInputFiles([])).toBe('No input files were provided.');
  });
});

describe('findInputFile', () => {
  const files = [
    toolFileFromInput({ name: 'A.txt', content: '1' }),
    toolFileFromInput({ name: 'a.TXT', content: '2' }),
    toolFileFromInput({ name: 'b.txt', content: '3' }),
  ];

  it('prefers an exact match and accepts a unique case-insensitive one', () => {
    expect(findInputFile(files, 'a.TXT')?.content).toBe('2');
    expect(findInputFile(files, 'B.TXT')?.content).toBe('3');
    expect(findInputFile(files, 'a.txt')).toBeUndefined();
  });
});
