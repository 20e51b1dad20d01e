import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { configFromEnvironment } from '#libs/config';
import { createApiApp } from './app.js';

const config = configFromEnvironment();
const app = await createApiApp();
await app.listen(config.port, '0.0.0.0');
new Logger('api').log(`listening on ${config.publicBaseUrl}`);
