import type { INestApplication } from '@nestjs/common';
import type { AddressInfo } from 'node:net';
import { createApiApp } from '../../apps/api/src/app.js';

/** A running api on an ephemeral loopback port, built exactly as apps/api/src/main.ts builds it. */
export interface RunningApi {
  readonly app: INestApplication;
  readonly url: string;
  close(): Promise<void>;
}

/** Starts the api; `env` overrides process.env while the app reads its configuration. */
export async function startApi(env: Record<string, string> = {}): Promise<RunningApi> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  let app: INestApplication;
  try {
    app = await createApiApp({ logLevels: ['warn', 'error', 'fatal'] });
    await app.listen(0, '127.0.0.1');
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { app, url: `http://127.0.0.1:${port}`, close: () => app.close() };
}
