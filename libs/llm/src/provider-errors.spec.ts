import { ModelError } from './model-error.js';
import { APICallError } from 'ai';
import { baseUrlOf, errorForStatus, providerMessage, sdkFailure } from './provider-errors.js';

describe('errorForStatus', () => {
  const openAiBody = (message: string): string =>
    JSON.stringify({ error: { message, type: 'invalid_request_error', code: 'invalid_api_key' } });

  it('makes a 401 a rejected, non-retryable error with the provider message and no key', () => {
    const key = 'sk-secret-key-1234567890';
    const error = errorForStatus('openai', 401, openAiBody(`Incorrect API key provided: ${key}`), [key]);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'rejected', retryable: false, status: 401 });
    expect(error.message).toBe('openai rejected the request (401): Incorrect API key provided: [redacted]');
    expect(error.message).not.toContain(key);
  });

  it.each([429, 500, 502, 503, 529, 408])('makes %i retryable and unavailable', (status) => {
    const error = errorForStatus(
      'anthropic',
      status,
      JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
      [],
    );
    expect(error).toMatchObject({ kind: 'unavailable', retryable: true, status });
    expect(error.message).toContain(`(${status}): Overloaded`);
  });

  it.each([400, 403, 404, 413, 422])('makes %i rejected and final', (status) => {
    expect(errorForStatus('anthropic', status, '{}', [])).toMatchObject({
      kind: 'rejected',
      retryable: false,
      status,
      message: `anthropic rejected the request (${status})`,
    });
  });
});

describe('providerMessage', () => {
  it('reads error.message, a bare error string or a top-level message', () => {
    expect(providerMessage('{"error":{"message":"no such model"}}', [])).toBe('no such model');
    expect(providerMessage('{"error":"model \\"llama9\\" not found"}', [])).toBe('model "llama9" not found');
    expect(providerMessage('{"message":"bad gateway"}', [])).toBe('bad gateway');
    expect(providerMessage('{"Message":"The security token included in the request is invalid."}', [])).toBe(
      'The security token included in the request is invalid.',
    );
  });

  it('keeps short plain text but not HTML pages, and bounds long messages', () => {
    expect(providerMessage('upstream connect error', [])).toBe('upstream connect error');
    expect(providerMessage('<html><body>502 Bad Gateway</body></html>', [])).toBe('');
    expect(providerMessage('x'.repeat(2000), [])).toHaveLength(501);
  });
});

describe('sdkFailure', () => {
  const apiError = (options: Partial<ConstructorParameters<typeof APICallError>[0]>): APICallError =>
    new APICallError({
      message: 'failed',
      url: 'http://127.0.0.1/v1/chat/completions',
      requestBodyValues: {},
      ...options,
    });

  it('classifies an SDK HTTP error by its status, with the body message and without any secret', () => {
    const secret = 'aws-secret-0123456789abcdef';
    const error = sdkFailure(
      'bedrock',
      apiError({ statusCode: 403, responseBody: JSON.stringify({ message: `signature mismatch for ${secret}` }) }),
      undefined,
      ['key', secret],
    );
    expect(error).toMatchObject({
      kind: 'rejected',
      retryable: false,
      status: 403,
      message: 'bedrock rejected the request (403): signature mismatch for [redacted]',
    });
    expect(
      sdkFailure(
        'google',
        apiError({ statusCode: 503, responseBody: '{"error":{"code":503,"message":"overloaded"}}' }),
        undefined,
        [],
      ),
    ).toMatchObject({ kind: 'unavailable', retryable: true, status: 503 });
  });

  it('makes a refused connection retryable and unavailable, naming the code from the cause chain', () => {
    const refused = apiError({
      message: 'Cannot connect to API',
      cause: new TypeError('fetch failed', {
        cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
      }),
    });
    expect(sdkFailure('openai', refused, undefined, ['k'])).toMatchObject({
      kind: 'unavailable',
      retryable: true,
      message: 'openai could not be reached (ECONNREFUSED)',
    });
  });

  it('makes an error object inside a stream unavailable, or rejected when it blames the request', () => {
    expect(sdkFailure('anthropic', { type: 'overloaded_error', message: 'Overloaded' }, undefined, [])).toMatchObject({
      kind: 'unavailable',
      message: 'anthropic failed while answering: Overloaded',
    });
    expect(
      sdkFailure(
        'anthropic',
        { type: 'error', error: { type: 'invalid_request_error', message: 'bad' } },
        undefined,
        [],
      ),
    ).toMatchObject({ kind: 'rejected', message: 'anthropic rejected the request: bad' });
  });

  it("passes the caller's abort reason through, but turns a timeout into unavailable", () => {
    const cancelled = new AbortController();
    const reason = new Error('activity cancelled');
    cancelled.abort(reason);
    expect(sdkFailure('openai', new Error('aborted'), cancelled.signal, [])).toBe(reason);

    const timedOut = new AbortController();
    timedOut.abort(new DOMException('timed out', 'TimeoutError'));
    expect(sdkFailure('anthropic', new Error('aborted'), timedOut.signal, [])).toMatchObject({
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
    expect(() => baseUrlOf('openai', 'not a url', 'x')).toThrow(
      expect.objectContaining({ kind: 'rejected', retryable: false }),
    );
    expect(() => baseUrlOf('anthropic', 'file:///etc', 'x')).toThrow(ModelError);
  });
});
