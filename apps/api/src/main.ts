import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { configFromEnvironment } from '#libs/config';
import { startTracing } from '#libs/observability';
import { createApiApp, drainAndClose } from './app.js';

const config = configFromEnvironment();
startTracing('mas-api', config);
const app = await createApiApp();
await app.listen(config.port, '0.0.0.0');
new Logger('api').log(`listening on ${config.publicBaseUrl}`);

// SIGTERM (an orchestrator, npm start) or Ctrl-C: stop taking requests, finish those in flight,
// then close. A second signal does not cut the drain short; the supervisor's own deadline does.
let stopping: Promise<void> | undefined;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    stopping ??= drainAndClose(app).then(
      () => process.exit(0),
      (e: unknown) => {
        new Logger('api').error(`shutdown failed: ${e instanceof Error ? e.message : String(e)}`);
        process.exit(1);
      },
    );
  });
}
