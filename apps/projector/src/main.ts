import 'reflect-metadata';
import { once } from 'node:events';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ProjectorModule } from './projector.module.js';

const app = await NestFactory.createApplicationContext(ProjectorModule);
await app.init();
new Logger('projector').log('running projections; SIGINT or SIGTERM stops it');
await Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]);
await app.close();
