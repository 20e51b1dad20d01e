import { ModelError } from './model-error.js';
import { APICallError } from 'ai';
import { DestinationRefused } from '#libs/egress';
import { baseUrlOf, errorForStatus, sdkFailure } from './provider-errors.js';

describe('errorForStatus', () => {
  it.each([
    [401, 'rejected', 'model provider openai refused the key (HTTP 401)'],
    [403, 'rejected', 'model provider openai denied the key access to the model (HTTP 403)'],
    [404, 'rejected', 'model provider openai did not find the model or the endpoint (HTTP 404)'],
    [413, 'rejected', 'model provider openai refused the request as too large (HTTP 413)'],
    [400, 'rejected', 'model provider openai rejected the request (HTTP 400)'],
    [422, 'rejected', 'model provider openai rejected the request (HTTP 422)'],
    [429, 'unavailable', 'model provider openai rate-limited the request (HTTP 429)'],
    [408, 'unavailable', 'model provider openai is unavailable (HTTP 408)'],
    [500, 'unavailable', 'model provider openai is unavailable (HTTP 500)'],
    [529, 'unavailable', 'model provider openai is unavailable (HTTP 529)'],
  ] as const)("says %i in the service's words: %s", (status, kind, message) => {
    const error = errorForStatus('openai', status);
    expect(error).toBeInstanceOf(ModelError);
    // DESIGN.md section 6: 429, 408 and 5xx are retried; any other 4xx fails at once.
    expect(error).toMatchObject({ kind, status, message, retryable: kind === 'unavailable' });
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

  it("classifies an SDK HTTP error by its status, in the service's words: nothing of the body", () => {
    const error = sdkFailure(
      'bedrock',
      apiError({ statusCode: 403, responseBody: JSON.stringify({ message: 'REMOTE-MARKER signature mismatch' }) }),
      undefined,
      ['key'],
    );
    expect(error).toMatchObject({
      kind: 'rejected',
      retryable: false,
      status: 403,
      message: 'model provider bedrock denied the key access to the model (HTTP 403)',
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
      message: 'model provider openai could not be reached (ECONNREFUSED)',
    });
  });

  it("makes an egress refusal final in libs/egress's words, and a name that did not resolve retryable", () => {
    const refused = new DestinationRefused(
      'Refused to call the openai model at http://10.0.0.5: 10.0.0.5 is a private address. ...',
    );
    expect(sdkFailure('openai', refused, undefined, [])).toMatchObject({
      kind: 'rejected',
      retryable: false,
      message: refused.message,
    });
    const wrapped = apiError({ message: 'Cannot connect to API', cause: refused });
    expect(sdkFailure('openai', wrapped, undefined, [])).toMatchObject({ kind: 'rejected', message: refused.message });
    const unresolved = new DestinationRefused(
      'Could not call the openai model at http://nx.example: ...',
      'unresolved',
    );
    expect(sdkFailure('openai', unresolved, undefined, [])).toMatchObject({ kind: 'unavailable', retryable: true });
  });

  it('never repeats the text of an SDK error about the body (it quotes what came back)', () => {
    const quoting = Object.assign(new Error('Invalid response data: {"secret":"REMOTE-MARKER"}'), {
      name: 'AI_InvalidResponseDataError',
    });
    const error = sdkFailure('openai', quoting, undefined, []) as ModelError;
    expect(error).toMatchObject({ kind: 'invalid_response' });
    expect(error.message).not.toContain('REMOTE-MARKER');
    const other = Object.assign(new Error('Something "REMOTE-MARKER"'), { name: 'AI_SomeNewError' });
    expect((sdkFailure('openai', other, undefined, []) as ModelError).message).toBe(
      'model provider openai could not be reached (AI_SomeNewError)',
    );
  });

  it('makes an error object inside a stream unavailable, or rejected when it blames the request, without its message', () => {
    expect(sdkFailure('anthropic', { type: 'overloaded_error', message: 'Overloaded' }, undefined, [])).toMatchObject({
      kind: 'unavailable',
      message: 'model provider anthropic failed while answering',
    });
    expect(
      sdkFailure(
        'anthropic',
        { type: 'error', error: { type: 'invalid_request_error', message: 'bad' } },
        undefined,
        [],
      ),
    ).toMatchObject({ kind: 'rejected', message: 'model provider anthropic rejected the request while answering' });
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
      message: 'model provider anthropic did not answer in time',
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
