import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ProjectorModule } from '../../apps/projector/src/projector.module.js';
import { RelayModule } from '../../apps/relay/src/relay.module.js';
import { withEnv } from './env.js';

/** The event path after the event store, in this process, as `npm start` runs it: the outbox
 * relay (apps/relay: PostgreSQL to Kafka) and the projector (apps/projector: Kafka to read models). */
export async function startEventPipeline(
  env: Record<string, string | undefined> = {},
): Promise<{ close(): Promise<void> }> {
  const apps: INestApplicationContext[] = await withEnv(env, async () => {
    const started: INestApplicationContext[] = [];
    for (const module of [RelayModule, ProjectorModule]) {
      const context = await NestFactory.createApplicationContext(module, { logger: ['warn', 'error', 'fatal'] });
      await context.init();
      started.push(context);
    }
    return started;
  });
  return { close: async () => void (await Promise.all(apps.map((a) => a.close()))) };
}
