import type { INestApplication } from '@nestjs/common';
import type { AddressInfo } from 'node:net';
import { createApiApp } from '../../apps/api/src/app.js';
import { slowStartReport, withEnv } from './env.js';

/** A running api on an ephemeral loopback port, built exactly as apps/api/src/main.ts builds it. */
export interface RunningApi {
  readonly app: INestApplication;
  readonly url: string;
  close(): Promise<void>;
}

/** Starts the api; `env` overrides process.env while the app reads its configuration. */
export async function startApi(env: Record<string, string | undefined> = {}): Promise<RunningApi> {
  const phases = slowStartReport('api');
  const app = await withEnv(env, async () => {
    const created = await createApiApp({ logLevels: ['warn', 'error', 'fatal'] });
    phases.done('created');
    await created.listen(0, '127.0.0.1');
    return created;
  });
  phases.end();
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { app, url: `http://127.0.0.1:${port}`, close: () => app.close() };
}
