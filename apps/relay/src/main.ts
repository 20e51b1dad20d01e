import 'reflect-metadata';
import { once } from 'node:events';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RelayModule } from './relay.module.js';

const app = await NestFactory.createApplicationContext(RelayModule);
await app.init();
new Logger('relay').log('relaying the outbox to Kafka and pruning what has passed its retention; SIGINT or SIGTERM stops it');
await Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]);
await app.close();
