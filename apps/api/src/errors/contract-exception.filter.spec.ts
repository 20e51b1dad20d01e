import type { ArgumentsHost } from '@nestjs/common';
import type { AppConfig } from '#libs/config';
import { JsonThreadLost } from '../json-off-thread.js';
import { ContractExceptionFilter } from './contract-exception.filter.js';

/** What the filter answers for `exception`: status, headers and body (no I/O: a response stand-in). */
function answer(exception: unknown): { status: number; headers: Record<string, string>; body: unknown } {
  const sent = { status: 0, headers: {} as Record<string, string>, body: undefined as unknown };
  const res = {
    headersSent: false,
    setHeader: (name: string, value: string) => void (sent.headers[name] = value),
    status: (status: number) => ((sent.status = status), res),
    json: (body: unknown) => void (sent.body = body),
  };
  const host = {
    switchToHttp: () => ({ getResponse: () => res, getRequest: () => ({ complete: true }) }),
  } as unknown as ArgumentsHost;
  const filter = new ContractExceptionFilter({ publicBaseUrl: 'https://api.example' } as AppConfig);
  (filter as unknown as { logger: { warn(): void; error(): void } }).logger = { warn: () => {}, error: () => {} };
  filter.catch(exception, host);
  return sent;
}

describe('ContractExceptionFilter', () => {
  // Session 20: a JSON thread that stopped under a request's body or files was a 500.
  it('answers a request the JSON thread lost with 503 service_unavailable and Retry-After', () => {
    const { status, headers, body } = answer(new JsonThreadLost('the JSON thread stopped (exit code 1)'));
    expect(status).toBe(503);
    expect(headers['Retry-After']).toBe('1');
    expect(body).toMatchObject({
      error: { code: 'service_unavailable', message: expect.stringContaining('Nothing was run') },
    });
  });

  it('answers an unknown failure with 500 internal_error, its message not shown', () => {
    const { status, body } = answer(new Error('secret detail'));
    expect(status).toBe(500);
    expect(JSON.stringify(body)).not.toContain('secret detail');
    expect(body).toMatchObject({ error: { code: 'internal_error' } });
  });
});
