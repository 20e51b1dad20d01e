import type { ToolFile } from '../tool.js';
import { readFileTool } from './read-file.tool.js';

const text = (name: string, content: string, mediaType = 'text/plain'): ToolFile => ({
  name,
  content,
  encoding: 'utf8',
  mediaType,
});

const inputFiles: ToolFile[] = [
  text('notes.md', '# Notes\n\nRemember the milk.', 'text/markdown'),
  text('people.csv', 'name,age\nann,31\n', 'text/csv'),
  text(
    'page.html',
    '<html><head><title>T</title><script>evil()</script></head><body><h1>Hello</h1><p>See <a href="https://e.example/x">this</a>.</p></body></html>',
    'text/html',
  ),
  {
    name: 'config.json',
    content: Buffer.from('{"a":1}').toString('base64'),
    encoding: 'base64',
    mediaType: 'application/json',
  },
  { name: 'photo.png', content: 'iVBORw0KGgo=', encoding: 'base64', mediaType: 'image/png' },
  text('fake.pdf', 'not really a pdf', 'application/pdf'),
];

describe('read_file', () => {
  it('reads Markdown and CSV as they are', async () => {
    await expect(readFileTool.run({ name: 'notes.md' }, { inputFiles })).resolves.toEqual({
      ok: true,
      output: 'File: notes.md (text/markdown, 27 B)\n\n# Notes\n\nRemember the milk.',
    });
    await expect(readFileTool.run({ name: 'PEOPLE.CSV' }, { inputFiles })).resolves.toEqual({
      ok: true,
      output: 'File: people.csv (text/csv, 16 B)\n\nname,age\nann,31\n',
    });
  });

  it('converts HTML to text without scripts', async () => {
    await expect(readFileTool.run({ name: 'page.html' }, { inputFiles })).resolves.toEqual({
      ok: true,
      output: 'File: page.html (text/html, 142 B, converted from HTML)\n\nHello\n\nSee this [https://e.example/x].',
    });
  });

  it('decodes a text file sent as base64', async () => {
    await expect(readFileTool.run({ name: 'config.json' }, { inputFiles })).resolves.toEqual({
      ok: true,
      output: 'File: config.json (application/json, 7 B)\n\n{"a":1}',
    });
  });

  it('pages through long files with offset', async () => {
    const files = [text('long.txt', 'abcdefghij')];
    await expect(
      readFileTool.run({ name: 'long.txt' }, { inputFiles: files, options: { maxOutputChars: 4 } }),
    ).resolves.toEqual({
      ok: true,
      output:
        'File: long.txt (text/plain, 10 B, characters 0-4 of 10)\n\nabcd\n[truncated: 6 more characters; call read_file with offset 4 to continue]',
    });
    await expect(
      readFileTool.run({ name: 'long.txt', offset: 8 }, { inputFiles: files, options: { maxOutputChars: 4 } }),
    ).resolves.toEqual({
      ok: true,
      output: 'File: long.txt (text/plain, 10 B, characters 8-10 of 10)\n\nij',
    });
    await expect(readFileTool.run({ name: 'long.txt', offset: 10 }, { inputFiles: files })).resolves.toEqual({
      ok: false,
      error: 'Offset 10 is past the end of long.txt (10 characters of text).',
    });
  });

  it('refuses binary files, a PDF that is not base64, and unknown names', async () => {
    await expect(readFileTool.run({ name: 'photo.png' }, { inputFiles })).resolves.toEqual({
      ok: false,
      error: 'photo.png is a binary file (image/png); read_file reads text, Markdown, CSV, JSON, HTML and PDF files.',
    });
    await expect(readFileTool.run({ name: 'fake.pdf' }, { inputFiles })).resolves.toEqual({
      ok: false,
      error: 'fake.pdf must be sent base64-encoded to be read as a PDF.',
    });
    await expect(readFileTool.run({ name: 'missing.txt' }, { inputFiles })).resolves.toEqual({
      ok: false,
      error:
        'There is no input file named "missing.txt". Input files: notes.md, people.csv, page.html, config.json, photo.png, fake.pdf.',
    });
    await expect(readFileTool.run({ name: 'missing.txt' })).resolves.toEqual({
      ok: false,
      error: 'There is no input file named "missing.txt". The request has no input files.',
    });
  });
});
