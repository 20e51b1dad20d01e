import { redactSecret } from './redact.js';

describe('redactSecret', () => {
  const key = 'sk-live-0123456789abcdefXYZ';

  it('removes every occurrence of the key', () => {
    expect(redactSecret(`Incorrect API key provided: ${key}. Key ${key} is revoked`, key)).toBe(
      'Incorrect API key provided: [redacted]. Key [redacted] is revoked',
    );
  });

  it('removes a masked echo of the key and fragments of it', () => {
    expect(redactSecret('Incorrect API key provided: sk-live-**************cXYZ.', key)).toBe(
      'Incorrect API key provided: [redacted].',
    );
    expect(redactSecret('key starting 0123456789ab is unknown', key)).toBe('key starting [redacted] is unknown');
  });

  it('removes things shaped like secret keys even when the key is unknown', () => {
    expect(redactSecret('bad key sk-ant-api03-abcdefghijklmnopqrstuvwx given', null)).toBe('bad key [redacted] given');
  });

  it('leaves ordinary messages alone', () => {
    const message = 'model "gpt-4o-mini" does not exist or you do not have access to it';
    expect(redactSecret(message, key)).toBe(message);
    expect(redactSecret(message, null)).toBe(message);
  });
});
