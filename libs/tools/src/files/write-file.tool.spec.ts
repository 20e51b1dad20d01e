import { writeFileTool } from './write-file.tool.js';

describe('write_file', () => {
  it('returns a text file with its media type', async () => {
    await expect(writeFileTool.run({ name: 'summary.txt', content: 'héllo' })).resolves.toEqual({
      ok: true,
      output: 'Wrote summary.txt (text/plain, 6 B).',
      files: [{ name: 'summary.txt', content: 'héllo', encoding: 'utf8', mediaType: 'text/plain' }],
    });
  });

  it('returns a binary file given as base64', async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).toString('base64');
    await expect(writeFileTool.run({ name: 'pixel.png', content: png, encoding: 'base64' })).resolves.toEqual({
      ok: true,
      output: 'Wrote pixel.png (image/png, 8 B).',
      files: [{ name: 'pixel.png', content: png, encoding: 'base64', mediaType: 'image/png' }],
    });
  });

  it.each([
    ['../secrets.txt', 'Cannot write "../secrets.txt": the file name may not contain path separators (/ or \\).'],
    ['a..txt', 'Cannot write "a..txt": the file name may not contain "..".'],
    [
      '.bashrc',
      'Cannot write ".bashrc": the file name may not start with a dot or a space, or end with a dot or a space.',
    ],
  ])('refuses the name %p', async (name, error) => {
    await expect(writeFileTool.run({ name, content: 'x' })).resolves.toEqual({ ok: false, error });
  });

  it('refuses an over-long name through argument validation', async () => {
    await expect(writeFileTool.run({ name: `${'a'.repeat(130)}.txt`, content: 'x' })).resolves.toEqual({
      ok: false,
      error: 'Invalid arguments for write_file: arguments.name must NOT have more than 128 characters.',
    });
  });

  it('refuses content over the size limit', async () => {
    await expect(
      writeFileTool.run({ name: 'big.txt', content: 'x'.repeat(2001) }, { options: { maxBytes: 2000 } }),
    ).resolves.toEqual({
      ok: false,
      error: 'Cannot write "big.txt": it is 2,001 bytes, over the 2,000-byte limit per file.',
    });
    await expect(writeFileTool.run({ name: 'big.txt', content: 'x'.repeat(1024 * 1024 + 1) })).resolves.toEqual({
      ok: false,
      error: 'Cannot write "big.txt": it is 1,048,577 bytes, over the 1,048,576-byte limit per file.',
    });
  });

  it('refuses content that is not base64 when it says it is', async () => {
    await expect(writeFileTool.run({ name: 'a.bin', content: 'not base64!', encoding: 'base64' })).resolves.toEqual({
      ok: false,
      error: 'Cannot write "a.bin": content is not valid base64 (encoding is "base64").',
    });
  });

  it('refuses garbage arguments', async () => {
    await expect(writeFileTool.run('write it')).resolves.toEqual({
      ok: false,
      error: 'Invalid arguments for write_file: arguments must be object.',
    });
    await expect(writeFileTool.run({ name: 'a.txt', content: 5, encoding: 'utf16' })).resolves.toEqual({
      ok: false,
      error:
        'Invalid arguments for write_file: arguments.content must be string; arguments.encoding must be one of ["utf8","base64"].',
    });
  });
});
