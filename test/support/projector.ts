import { NestFactory } from '@nestjs/core';
import { ProjectorModule, ProjectorService } from '../../apps/projector/src/projector.module.js';
import { withEnv } from './env.js';

/** The projector (outbox relay and projections), in this process, as apps/projector starts it. */
export async function startProjector(env: Record<string, string | undefined> = {}): Promise<{ service: ProjectorService; close(): Promise<void> }> {
  const app = await withEnv(env, async () => {
    const context = await NestFactory.createApplicationContext(ProjectorModule, { logger: ['warn', 'error', 'fatal'] });
    await context.init();
    return context;
  });
  return { service: app.get(ProjectorService), close: () => app.close() };
}
