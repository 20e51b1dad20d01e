import 'reflect-metadata';
import { once } from 'node:events';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ProjectorModule } from './projector.module.js';

const app = await NestFactory.createApplicationContext(ProjectorModule);
await app.init();
new Logger('projector').log('running; SIGINT or SIGTERM stops it');
// A daemon: consumers run on their own; the process lives until it is told to stop.
const keepAlive = setInterval(() => undefined, 2 ** 30);
await Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]);
clearInterval(keepAlive);
await app.close();
