import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import type { Request, Response } from 'express';
import { createLogger } from './logger.js';
import { httpLogging, pathForTelemetry } from './http-logging.js';

// The access log line of a request that no route matched (refused before routing: a 401, a 413):
// its path is written, so a secret that travels in a path must not be.
function logLineOf(path: string, statusCode: number): Promise<string> {
  const destination = new PassThrough();
  const written = new Promise<string>((resolve) =>
    destination.once('data', (chunk: Buffer) => resolve(chunk.toString())),
  );
  const middleware = httpLogging(createLogger({ app: 'test', format: 'json', level: 'info', destination }));
  const res = Object.assign(new EventEmitter(), { statusCode, writableFinished: true });
  middleware({ method: 'POST', path } as Request, res as unknown as Response, () => undefined);
  res.emit('close');
  return written;
}

describe('paths in the access log and in traces', () => {
  const token = 'ONTKIJZHIv_Smj62baJTHRmO0JBISpZCnt5E7IPsllw';

  it('never carries the codec token of /codec/<token>/<op>', async () => {
    const line = await logLineOf(`/codec/${token}/decode`, 413);
    expect(line).not.toContain(token);
    expect(JSON.parse(line)).toMatchObject({ msg: 'POST /codec/:token/decode 413', route: 'unmatched' });
  });

  it('keeps every other path as it is', async () => {
    expect(JSON.parse(await logLineOf('/v1/nowhere', 404))).toMatchObject({ msg: 'POST /v1/nowhere 404' });
    expect(pathForTelemetry('/codec/decode')).toBe('/codec/decode');
    expect(pathForTelemetry(`/CODEC/${token}/encode/`)).toBe('/CODEC/:token/encode/');
    expect(pathForTelemetry('/v1/agent/abc')).toBe('/v1/agent/abc');
  });
});
