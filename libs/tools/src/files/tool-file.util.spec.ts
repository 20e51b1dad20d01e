import {
  fileExtension,
  fileNameProblem,
  formatBytes,
  isBase64,
  isBinaryFileName,
  mediaTypeFor,
  toolFileFromInput,
  toolFileText,
} from './tool-file.util.js';

describe('fileNameProblem', () => {
  it.each(['report.pdf', 'data 2024.csv', 'résumé.md', 'a', 'chart-1_final.svg', 'x.y.z'])('accepts %p', (name) => {
    expect(fileNameProblem(name)).toBeUndefined();
  });

  it.each([
    ['', 'the file name is empty'],
    ['a'.repeat(129), 'the file name is longer than 128 characters'],
    ['../etc/passwd', 'the file name may not contain path separators (/ or \\)'],
    ['dir/file.txt', 'the file name may not contain path separators (/ or \\)'],
    ['dir\\file.txt', 'the file name may not contain path separators (/ or \\)'],
    ['a..b', 'the file name may not contain ".."'],
    ['..', 'the file name may not contain ".."'],
    ['bad\u0000name', 'the file name may not contain control characters or any of < > : " | ? *'],
    ['what?.txt', 'the file name may not contain control characters or any of < > : " | ? *'],
    ['C:evil', 'the file name may not contain control characters or any of < > : " | ? *'],
    ['.env', 'the file name may not start with a dot or a space, or end with a dot or a space'],
    ['trailing.', 'the file name may not start with a dot or a space, or end with a dot or a space'],
  ])('refuses %p', (name, problem) => {
    expect(fileNameProblem(name)).toBe(problem);
  });
});

describe('media types and encodings', () => {
  it('derives them from the extension', () => {
    expect(fileExtension('Report.PDF')).toBe('pdf');
    expect(fileExtension('README')).toBe('');
    expect(fileExtension('.hidden')).toBe('');
    expect(mediaTypeFor('a.csv')).toBe('text/csv');
    expect(mediaTypeFor('a.unknown')).toBe('text/plain');
    expect(mediaTypeFor('a.unknown', 'base64')).toBe('application/octet-stream');
    expect(isBinaryFileName('scan.pdf')).toBe(true);
    expect(isBinaryFileName('notes.md')).toBe(false);
  });

  it('types a contract input file: binary extensions are base64', () => {
    expect(toolFileFromInput({ name: 'scan.pdf', content: 'JVBERi0=' })).toEqual({
      name: 'scan.pdf',
      content: 'JVBERi0=',
      encoding: 'base64',
      mediaType: 'application/pdf',
    });
    expect(toolFileFromInput({ name: 'data.csv', content: 'a,b\n1,2' })).toEqual({
      name: 'data.csv',
      content: 'a,b\n1,2',
      encoding: 'utf8',
      mediaType: 'text/csv',
    });
  });

  it('decodes base64 text', () => {
    expect(
      toolFileText({
        name: 'a.txt',
        content: Buffer.from('héllo').toString('base64'),
        encoding: 'base64',
        mediaType: 'text/plain',
      }),
    ).toBe('héllo');
  });

  it('checks base64 strictly', () => {
    expect(isBase64('aGVsbG8=')).toBe(true);
    expect(isBase64('aGVs\nbG8=')).toBe(true);
    expect(isBase64('')).toBe(true);
    expect(isBase64('hello!')).toBe(false);
    expect(isBase64('aGVsbG8')).toBe(false);
  });

  it('formats sizes', () => {
    expect([formatBytes(812), formatBytes(12_600), formatBytes(1_468_006)]).toEqual(['812 B', '12.3 KB', '1.4 MB']);
  });
});
