import { contentDisposition } from './content-disposition.js';

describe('contentDisposition', () => {
  it.each([
    ['report.pdf', `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`],
    ['报告.md', `attachment; filename="__.md"; filename*=UTF-8''%E6%8A%A5%E5%91%8A.md`],
    ['résumé.txt', `attachment; filename="r_sum_.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9.txt`],
    ['a \u{1F680}.txt', `attachment; filename="a _.txt"; filename*=UTF-8''a%20%F0%9F%9A%80.txt`],
    [
      `50% "off"; a\\b.txt`,
      `attachment; filename="50_ _off_; a_b.txt"; filename*=UTF-8''50%25%20%22off%22%3B%20a%5Cb.txt`,
    ],
    ['line\r\nbreak\u0000.txt', `attachment; filename="line__break_.txt"; filename*=UTF-8''line%0D%0Abreak%00.txt`],
    ['lone\ud800.txt', `attachment; filename="lone_.txt"; filename*=UTF-8''lone%EF%BF%BD.txt`],
  ])('%j', (name, header) => {
    expect(contentDisposition(name)).toBe(header);
  });

  it('is always a value Node accepts as a header, and decodes back to the name', () => {
    for (const name of ['报告.md', `"quoted"`, 'tab\there', "it's (1).txt", '\u{1F680}\u{1F680}', 'ÿ\u0100']) {
      const header = contentDisposition(name);
      expect(header).toMatch(/^[\x20-\x7e]*$/);
      expect(decodeURIComponent(header.split("filename*=UTF-8''")[1]!)).toBe(name);
    }
  });
});
