import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { configFromEnvironment } from '#libs/config';
import { createConsoleApp } from './app.js';

const config = configFromEnvironment();
const app = await createConsoleApp();
await app.listen(config.console.port, '0.0.0.0');
new Logger('console').log(`listening on ${config.console.publicUrl}`);

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void app.close().then(() => process.exit(0));
  });
}
