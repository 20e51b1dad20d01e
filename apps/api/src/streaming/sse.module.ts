import { Module } from '@nestjs/common';
import { MeteringModule } from '#libs/metering';
import { StreamHubModule } from '#libs/streaming';
import { SseResponder } from './sse-responder.js';

@Module({ imports: [StreamHubModule, MeteringModule], providers: [SseResponder], exports: [SseResponder] })
export class SseModule {}
