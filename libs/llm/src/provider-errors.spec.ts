import { ModelError } from './model-error.js';
import { baseUrlOf, errorForStatus, providerMessage, transportFailure } from './provider-http.js';

describe('errorForStatus', () => {
  const openAiBody = (message: string): string => JSON.stringify({ error: { message, type: 'invalid_request_error', code: 'invalid_api_key' } });

  it('makes a 401 a rejected, non-retryable error with the provider message and no key', () => {
    const key = 'sk-secret-key-1234567890';
    const error = errorForStatus('openai', 401, openAiBody(`Incorrect API key provided: ${key}`), key);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'rejected', retryable: false, status: 401 });
    expect(error.message).toBe('openai rejected the request (401): Incorrect API key provided: [redacted]');
    expect(error.message).not.toContain(key);
  });

  it.each([429, 500, 502, 503, 529, 408])('makes %i retryable and unavailable', (status) => {
    const error = errorForStatus('anthropic', status, JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }), null);
    expect(error).toMatchObject({ kind: 'unavailable', retryable: true, status });
    expect(error.message).toContain(`(${status}): Overloaded`);
  });

  it.each([400, 403, 404, 413, 422])('makes %i rejected and final', (status) => {
    expect(errorForStatus('anthropic', status, '{}', null)).toMatchObject({ kind: 'rejected', retryable: false, status, message: `anthropic rejected the request (${status})` });
  });
});

describe('providerMessage', () => {
  it('reads error.message, a bare error string or a top-level message', () => {
    expect(providerMessage('{"error":{"message":"no such model"}}', null)).toBe('no such model');
    expect(providerMessage('{"error":"model \\"llama9\\" not found"}', null)).toBe('model "llama9" not found');
    expect(providerMessage('{"message":"bad gateway"}', null)).toBe('bad gateway');
  });

  it('keeps short plain text but not HTML pages, and bounds long messages', () => {
    expect(providerMessage('upstream connect error', null)).toBe('upstream connect error');
    expect(providerMessage('<html><body>502 Bad Gateway</body></html>', null)).toBe('');
    expect(providerMessage('x'.repeat(2000), null)).toHaveLength(501);
  });
});

describe('transportFailure', () => {
  it('makes a refused connection retryable and unavailable, naming the code', () => {
    const error = transportFailure({ provider: 'openai', apiKey: 'k' }, new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }) }));
    expect(error).toMatchObject({ kind: 'unavailable', retryable: true, message: 'openai could not be reached (ECONNREFUSED)' });
  });

  it("passes the caller's abort reason through, but turns a timeout into unavailable", () => {
    const cancelled = new AbortController();
    const reason = new Error('activity cancelled');
    cancelled.abort(reason);
    expect(transportFailure({ provider: 'openai', apiKey: null, signal: cancelled.signal }, new Error('aborted'))).toBe(reason);

    const timedOut = new AbortController();
    timedOut.abort(new DOMException('timed out', 'TimeoutError'));
    expect(transportFailure({ provider: 'anthropic', apiKey: null, signal: timedOut.signal }, new Error('aborted'))).toMatchObject({
      kind: 'unavailable',
      retryable: true,
      message: 'anthropic did not answer in time',
    });
  });
});

describe('baseUrlOf', () => {
  it('uses the default, strips trailing slashes and refuses malformed URLs', () => {
    expect(baseUrlOf('openai', null, 'https://api.openai.com/v1')).toBe('https://api.openai.com/v1');
    expect(baseUrlOf('openai', 'http://127.0.0.1:11434/v1/', 'x')).toBe('http://127.0.0.1:11434/v1');
    expect(() => baseUrlOf('openai', 'not a url', 'x')).toThrow(expect.objectContaining({ kind: 'rejected', retryable: false }));
    expect(() => baseUrlOf('anthropic', 'file:///etc', 'x')).toThrow(ModelError);
  });
});
