import type { INestApplication } from '@nestjs/common';
import type { AddressInfo } from 'node:net';
import { createConsoleApp } from '../../apps/console/src/app.js';
import { TEST_APP_ENV, withEnv } from './env.js';

/** A running customer console on an ephemeral loopback port, built as apps/console/src/main.ts builds it. */
export interface RunningConsole {
  readonly app: INestApplication;
  readonly url: string;
  close(): Promise<void>;
}

export async function startConsole(env: Record<string, string | undefined> = {}): Promise<RunningConsole> {
  const app = await withEnv({ ...TEST_APP_ENV, ...env }, async () => {
    const created = await createConsoleApp({ logLevels: ['warn', 'error', 'fatal'] });
    await created.listen(0, '127.0.0.1');
    return created;
  });
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { app, url: `http://127.0.0.1:${port}`, close: () => app.close() };
}
